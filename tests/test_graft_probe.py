"""paper_figures/graft_probe.py's draft vocabulary cut and its configurations, on the CPU."""
from engine_fixtures import engine, prompt, target_state
from paper_figures.graft_probe import configs, draft_vocabulary
from swiftspec_core.decoders.base import SpecSettings


def test_draft_vocabulary_is_a_view_of_the_heads_first_rows_and_is_restored():
    e = engine(target_state())
    saved, head = e.lm_head, e.embed if e.lm_head is None else e.lm_head
    with draft_vocabulary(e, 40):
        assert e.lm_head.shape[0] == 40 and e.lm_head.data_ptr() == head.data_ptr()
        cache = e.new_cache(64)
        logits = e.prefill(prompt(10), cache)
        assert logits.shape[-1] == 40
    assert e.lm_head is saved
    with draft_vocabulary(e, None):
        assert e.lm_head is saved


def test_configs_name_every_vocabulary_and_graft():
    runs = configs([3], SpecSettings(), ["ngram"], [None, 32768])
    assert list(runs) == ["swiftspec d3+graft", "tree+graft", "swiftspec d3+graft v32768", "tree+graft v32768"]
    assert runs["tree+graft v32768"][2] == 32768 and runs["swiftspec d3+graft"][1].draft_steps == 3
