"""What an engine does with its calls when an iteration ends: the mixin behind
:class:`parrotsim.sim.model.engine.Engine`.

It accounts the work that ended (busy time, iterations, batched sequences; and the iteration
recorder when one is set), emits the tokens of a prompt iteration or a decode stretch
(:mod:`parrotsim.sim.model.emission`), and ends calls: finished ones release their KV blocks,
ones the policy gave up on end with the tokens they have, and every ended call's forked prefix
loses a user before its answer leaves (at once, or held in the front end's door). Times are
simulated seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from parrotsim.sim.model.emission import (
    end_decode_stretch,
    end_ledger_stretch,
    end_prefill_iteration,
    release,
)
from parrotsim.sim.model.sequence import Batch, Sequence

if TYPE_CHECKING:
    from parrotsim.sim.model.engine import InFlight, IterationRecorder


class EngineOutcomes:
    """Accounting, token emission and call endings of an engine (a mixin: it uses the
    engine's ``state``, ``policy``, ``prefix_cache``, ``on_finish``, ``_door`` and
    ``_finished``)."""

    __slots__ = ()

    def _account(self, work: InFlight) -> None:
        self.busy_time += work.end - work.start
        self.iterations += work.steps
        self.batched_seqs += work.steps * (len(work.batch.prefills) + len(work.batch.decodes))

    def _recording(self, recorder: IterationRecorder) -> Callable[[InFlight], None]:
        account = self._account

        def account_and_record(work: InFlight) -> None:
            account(work)
            recorder(self, work.start, work.end, work.batch, work.steps)
        return account_and_record

    def _emit_prefill(self, batch: Batch, start: float, end: float) -> None:
        end_prefill_iteration(batch, start, end, self.policy.prefill_emits_token, self._finish,
                              self._prefix_filled)

    def _emit_decode(self, batch: Batch, steps: int, first_end: float, end: float) -> None:
        if batch.ledger is not None:
            end_ledger_stretch(batch.ledger, steps, first_end, end, self._finish)
        else:
            end_decode_stretch(self.state.kv, batch, steps, first_end, end, self._finish)

    def _prefix_filled(self, seq: Sequence, end: float) -> None:
        """A shared-prefix fill completed: its KV becomes the cached parent context."""
        seq.finished = end
        self.state.running.remove(seq)
        self.prefix_cache.filled(seq)

    def _only_gives_up(self, batch: Batch, now: float) -> bool:
        """Whether ``batch`` runs nothing but gives up on calls; those end ``now`` (an engine
        step that runs no model returns them at once)."""
        if not batch.ignored or not batch.empty:
            return False
        for seq in batch.ignored:
            self._ignore(seq, now)
        return True

    def _ignore(self, seq: Sequence, end: float) -> None:
        """``seq`` (waiting, no KV of its own) was given up on by the policy: it ends at
        ``end`` with the tokens it generated."""
        seq.finished = end
        seq.output_len = seq.generated
        self.ignored_calls += 1
        self._answer(seq, end)

    def _finish(self, seq: Sequence, end: float) -> None:
        release(self.state, seq, end)
        self._finished.append(seq)
        self._answer(seq, end)

    def _answer(self, seq: Sequence, end: float) -> None:
        """``seq`` ended at ``end``: its forked prefix loses a user, and its answer leaves (at
        once, or held the policy's iterations in the front end's door)."""
        if seq.prefix_ctx is not None and self.prefix_cache is not None:
            self.prefix_cache.release(seq.prefix_ctx.key, end)
        if self._door is not None and self.policy.reply_waits > 0:
            self._door.answer_later(seq, self.iterations + self.policy.reply_waits)
        else:
            self.on_finish(seq, end)
