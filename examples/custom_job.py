"""A user's own training script for the shockwave runtime: linear regression with numpy.

Declare it in a native ``.jsonl`` workload with ``"run": {"command": ["python",
"examples/custom_job.py"], "seed": 1}`` (and ``"samples_per_epoch": 4096`` and batch sizes from
32, 64, 128), or run it alone::

    python examples/custom_job.py --epochs 6 --checkpoint /tmp/custom.ckpt

It uses only the public ``shockwave.job`` API, and it is preemption-safe: every checkpoint holds
all the state the next step depends on (weights, momentum, the epoch and the position in it,
the running loss, the batch size via the context), and the data order of every epoch comes from
the seed and the epoch's index, so a run stopped and resumed any number of times ends with the
same weights, bit for bit, as an uninterrupted one.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import shockwave.job as job

SAMPLES = 4096  # samples per epoch
FEATURES = 32
BATCH_SIZES = (32, 64, 128)  # the batch sizes this script can train at
LEARNING_RATE = 0.01  # at 32 samples; scaled by sqrt(batch size / 32)
MOMENTUM = 0.9
GROW_BELOW = 0.05  # grow the batch when an epoch improves the loss by less than 5 %
DATA_SEED = 2024  # the data set is the same for every job


def make_data() -> tuple[np.ndarray, np.ndarray]:
    """A fixed synthetic data set: y = X w* + 0.1 noise."""
    rng = np.random.default_rng(DATA_SEED)
    inputs = rng.normal(size=(SAMPLES, FEATURES))
    true_weights = rng.normal(size=FEATURES)
    targets = inputs @ true_weights + 0.1 * rng.normal(size=SAMPLES)
    return inputs, targets


def epoch_order(seed: int, epoch: int) -> np.ndarray:
    """The order of the samples in one epoch: from the seed and the epoch alone (no state)."""
    return np.random.default_rng([seed, epoch]).permutation(SAMPLES)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6, help="epochs (standalone only)")
    parser.add_argument("--checkpoint", default=None, help="checkpoint file (standalone only)")
    args = parser.parse_args(argv)

    # Under the scheduler, everything comes from the launch (and the arguments are only
    # checked against it); alone, the arguments describe the job.
    ctx = job.connect(
        samples_per_epoch=SAMPLES,
        batch_sizes=BATCH_SIZES,
        epochs=args.epochs,
        checkpoint_path=args.checkpoint,
    )
    with ctx:  # an exception escaping this block tells the scheduler "failed"
        inputs, targets = make_data()
        seed = ctx.launch.run.seed

        saved = ctx.restore()  # loads the checkpoint, then waits for the first lease
        if saved is None:  # a fresh start: everything from the seed
            weights = np.random.default_rng([seed, 10_000]).normal(scale=0.01, size=FEATURES)
            velocity = np.zeros(FEATURES)
            epoch, position, loss_sum, last_loss = 0, 0, 0.0, None
        else:  # a resumed start: everything from the checkpoint
            weights, velocity = saved.arrays["weights"], saved.arrays["velocity"]
            epoch, position = saved.meta["epoch"], saved.meta["position"]
            loss_sum, last_loss = saved.meta["loss_sum"], saved.meta["last_loss"]

        def state() -> tuple[dict[str, np.ndarray], dict[str, object]]:
            arrays = {"weights": weights, "velocity": velocity}
            meta = {"epoch": epoch, "position": position, "loss_sum": loss_sum}
            return arrays, {**meta, "last_loss": last_loss}

        order = epoch_order(seed, epoch)
        while epoch < ctx.launch.epochs:
            if ctx.should_stop():  # preempted: save everything and exit 0
                ctx.stop(*state())
                return 0

            batch_size = ctx.batch_size  # set by the context (restored on resume)
            batch = order[position : position + batch_size]  # the last batch may be partial
            x, y = inputs[batch], targets[batch]
            error = x @ weights - y
            gradient = x.T @ error * (2.0 / len(batch))
            rate = LEARNING_RATE * np.sqrt(batch_size / BATCH_SIZES[0])
            velocity = MOMENTUM * velocity + gradient
            weights = weights - rate * velocity
            loss_sum += float(error @ error)
            position += len(batch)

            ctx.report(samples=len(batch))  # one step of len(batch) samples

            if position == SAMPLES:  # the epoch is done: decide the next batch size
                loss = loss_sum / SAMPLES
                improving = last_loss is None or loss < (1.0 - GROW_BELOW) * last_loss
                larger = [b for b in ctx.launch.batch_sizes if b > batch_size]
                if not improving and larger:
                    ctx.set_batch_size(larger[0])
                epoch, position, loss_sum, last_loss = epoch + 1, 0, 0.0, loss
                order = epoch_order(seed, epoch)

            if ctx.checkpoint_due:  # the scheduler asked for a periodic checkpoint
                ctx.save(*state())

        final = job.digest({"weights": weights})
        ctx.finish(final)
    if ctx.is_standalone:
        print(f"loss {last_loss:.6f} batch sizes {ctx.epoch_batch_sizes} digest {final}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
