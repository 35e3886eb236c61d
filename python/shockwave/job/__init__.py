"""The job side of the runtime: what a training script uses to run under the scheduler.

(Work in progress: the lease protocol is in :mod:`shockwave.job.protocol`, the launch
description in :mod:`shockwave.job.spec`.)
"""
