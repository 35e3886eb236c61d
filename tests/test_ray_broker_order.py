"""The Ray executor's broker hands a job its scheduler messages in the order they were sent.

Ray runs an async actor's calls in no guaranteed order, even those of one caller; a lease grant
overtaken by the stop that followed it would leave a job training past its round.
"""

from __future__ import annotations

import itertools

import pytest

pytest.importorskip("ray")

from shockwave.runtime.ray_executor import _Outbox


@pytest.mark.parametrize("order", list(itertools.permutations(range(4))))
def test_messages_come_out_in_their_numbers_order_whatever_order_they_arrive_in(
    order: tuple[int, ...],
) -> None:
    outbox = _Outbox()
    delivered: list[bytes] = []
    for number in order:
        outbox.put(number, f"m{number}".encode())
        while not outbox.ready.empty():
            delivered.append(outbox.ready.get_nowait())
        # nothing is handed out before every message numbered below it has arrived
        assert delivered == [f"m{n}".encode() for n in range(len(delivered))]
    assert delivered == [b"m0", b"m1", b"m2", b"m3"]


def test_a_gap_holds_back_everything_after_it() -> None:
    outbox = _Outbox()
    outbox.put(1, b"stop")
    outbox.put(2, b"kill")
    assert outbox.ready.empty()
    outbox.put(0, b"grant")
    assert [outbox.ready.get_nowait() for _ in range(3)] == [b"grant", b"stop", b"kill"]
