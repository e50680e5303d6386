"""SwiftSpec across processes (gloo on CPU): the same tokens and accepted lengths as lockstep."""
from __future__ import annotations

import pytest
import torch

from swiftspec_core.decoders import DECODERS, SpecSettings
from swiftspec_core.errors import UserError
from swiftspec_core.models.loading import load_engine
from swiftspec_core.replay import Replay, ReplayProfile
from swiftspec_core.runtime.launch import WorkerError
from swiftspec_core.runtime.service import WorkerPlan, WorkerPool

SETTINGS = SpecSettings(tree_bs=6, tree_w=4, draft_steps=2)
PROFILE = ReplayProfile(emitted=(2, 4, 6), bonus_in_tree=(True, False, True), topk_logprobs=(-0.1, -2.5, -3.0, -4.0))


def plan(system: str, settings=SETTINGS, draft: str = "tiny-llama") -> WorkerPlan:
    return WorkerPlan(system=system, target="tiny-llama", draft=draft, weights="random", dtype="float64", seed=0,
                      max_seq_len=512, settings=settings)


def lockstep(system: str, prompt, replay=None, draft_seed=0):
    load = lambda seed: load_engine("tiny-llama", weights="random", dtype=torch.float64, seed=seed,  # noqa: E731
                                    max_seq_len=512)
    target = load(0)
    return DECODERS[system](target, load(draft_seed), prompt, max_new_tokens=40, eos_ids=set(), settings=SETTINGS,
                            replay=replay)


PROMPTS = [[5, 9, 33, 70, 12, 4, 99], [200, 3, 3, 17]]


def same_rows(got, ref):
    """What a replay source reads from a row is the same whether the run was split or lockstep."""
    assert got.bonus_in_tree == ref.bonus_in_tree and len(got.bonus_in_tree) == got.rounds
    assert got.draft_topk_logprobs == ref.draft_topk_logprobs and len(got.draft_topk_logprobs) == SETTINGS.tree_w
    assert got.draft_steps == ref.draft_steps == SETTINGS.draft_steps
    assert got.margins == pytest.approx(ref.margins, abs=1e-5) and len(got.margins) == len(got.tokens)


@pytest.mark.parametrize("world,split", [(2, (1, 1)), (4, (2, 2))])
def test_split_equals_lockstep(world, split):
    pool = WorkerPool(plan("swiftspec"), world_size=world, device="cpu", split=split)
    try:
        assert pool.draft_steps == SETTINGS.draft_steps
        for prompt in PROMPTS:
            ref = lockstep("swiftspec", prompt)
            got, latency = pool.decode(prompt, max_new_tokens=40, eos_ids=set())
            assert got.tokens == ref.tokens and got.accepted == ref.accepted
            assert latency > 0 and len(got.link_wait_s) == len(got.accepted) == len(got.draft_parallel_s)
            same_rows(got, ref)
        ref = lockstep("swiftspec", PROMPTS[0], replay=Replay(PROFILE, seed=3))
        got, _ = pool.decode(PROMPTS[0], max_new_tokens=40, eos_ids=set(), replay=PROFILE, replay_seed=3)
        assert got.accepted == ref.accepted and got.tokens == ref.tokens
        same_rows(got, ref)
    finally:
        pool.close()


def test_serial_tp2_equals_single_process():
    pool = WorkerPool(plan("tree"), world_size=2, device="cpu")
    try:
        ref = lockstep("tree", PROMPTS[1])
        got, _ = pool.decode(PROMPTS[1], max_new_tokens=40, eos_ids=set())
        assert got.tokens == ref.tokens and got.accepted == ref.accepted
    finally:
        pool.close()


def test_measured_draft_steps_and_worker_failure():
    pool = WorkerPool(plan("swiftspec", SpecSettings(tree_bs=6, tree_w=4)), world_size=2, device="cpu", split=(1, 1))
    try:
        assert pool.draft_steps >= 1
        with pytest.raises(WorkerError, match="rank"):
            pool.decode([1] * 600, max_new_tokens=40, eos_ids=set(), timeout=60)  # longer than the engine
    finally:
        with pytest.raises(WorkerError):
            pool.close()


def test_split_needs_gpus():
    target_gpus = max(torch.cuda.device_count(), 1)  # one more GPU than the machine has
    with pytest.raises(UserError, match=f"needs {target_gpus + 1} GPUs"):
        WorkerPool(plan("swiftspec"), world_size=target_gpus + 1, device="cuda", split=(target_gpus, 1))


def test_fitting_draft_steps_fits_a_requests_own_steps():
    from swiftspec_core.decoders.base import MIN_FIT_ROUNDS, DecodeResult, fitting_draft_steps

    # d = 4 steps took 6.4 ms (1.6 a step) against a 5.2 ms verification: 3 fit (4 would overrun 23%).
    rounds = MIN_FIT_ROUNDS + 2
    r = DecodeResult(tokens=[], target_s=[5.2e-3] * rounds, draft_parallel_s=[0.0] + [6.4e-3] * (rounds - 1),
                     draft_steps=4)
    assert fitting_draft_steps(r) == 3
    r.draft_parallel_s = [0.0] + [3.0e-3] * (rounds - 1)  # 0.75 ms a step: 7 end within 10% of 5.2 ms
    assert fitting_draft_steps(r) == 7
    r.draft_parallel_s = [0.0] + [5.6e-3] * (rounds - 1)  # 1.4 ms a step: the 4th ends 7.7% late, within 10%
    assert fitting_draft_steps(r) == 4
    r.draft_parallel_s = [0.0] + [40e-3] * (rounds - 1)  # a step longer than a verification: still 1
    assert fitting_draft_steps(r) == 1
    short = DecodeResult(tokens=[], target_s=[5.2e-3] * (MIN_FIT_ROUNDS - 1),
                         draft_parallel_s=[6.4e-3] * (MIN_FIT_ROUNDS - 1), draft_steps=4)
    assert fitting_draft_steps(short) is None


def test_a_pools_measured_d_follows_the_requests_and_each_request_carries_its_d():
    """WorkerPool.decode without workers: the answers are made up, the requests recorded."""
    from swiftspec_core.decoders.base import DecodeResult
    from swiftspec_core.runtime.service import WorkerPool

    def answers(per_step_ms):
        for ms in per_step_ms:
            yield "done", (DecodeResult(tokens=[1], target_s=[5.2e-3] * 8, draft_parallel_s=[4 * ms * 1e-3] * 8,
                                        draft_steps=4), 0.1)

    for adapt, want in ((True, [4, 3, 5, 2]), (False, [4, 4, 4, 4])):
        pool = WorkerPool.__new__(WorkerPool)
        sent = []
        pool.requests = type("Q", (), {"put": lambda self, req: sent.append(req.draft_steps)})()
        pool.draft_steps, pool.adapt_draft_steps, pool.in_flight = 4, adapt, False
        # steps of 1.6 ms (3 fit), then 1.0 ms (5), then 2.0 ms (2)
        got = answers([1.6, 1.0, 2.0, 1.0])
        pool._wait = lambda kind, timeout: next(got)
        for _ in range(4):
            pool.decode([1, 2], max_new_tokens=4, eos_ids=set())
        assert sent == want


def test_link_messages_round_trip_and_forget_the_last_round():
    """The verdict and tree buffers give back what was put, exactly (the log-probs as float64
    bits), and a shorter message leaves nothing of a longer earlier one."""
    from swiftspec_core.runtime.disagg import Messages, TreeMessage

    for bs, w in ((8, 8), (12, 8), (7, 3)):  # odd offsets put the float64 words off 8-byte alignment
        sent, got = Messages(bs, w), Messages(bs, w)
        long = TreeMessage(list(range(100, 100 + bs)), [-1] + list(range(bs - 1)), 4.321e-3, 0.123e-3, True,
                           [-0.1 * i - 1 / 3 for i in range(w)])
        short = TreeMessage([7, 8], [-1, 0], 0.0, 1e-6, None, [-2.5])
        for m in (long, short):
            got.tree.copy_(sent.put_tree(m))
            back = got.get_tree()
            assert (back.tokens, back.parents, back.reused, back.topk_logprobs) == (m.tokens, m.parents, m.reused,
                                                                                     m.topk_logprobs)
            assert abs(back.parallel_s - m.parallel_s) < 1e-6 and abs(back.critical_s - m.critical_s) < 1e-6
        assert got.tree[5 + 2:5 + bs].abs().sum() == 0 and got.tree[5 + bs + 2:5 + 2 * bs].abs().sum() == 0
        for tokens, stop, hint in ((list(range(bs)), False, True), ([5], True, None)):
            got.verdict.copy_(sent.put_verdict(tokens, stop, hint, 517))
            assert got.get_verdict() == (tokens, stop, hint, 517)
        assert got.verdict[5:].abs().sum() == 0
