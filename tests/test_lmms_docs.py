"""lmms-eval task records read as questions (no lmms-eval needed): each benchmark's own
record layout gives the question and options the loaders would give, and what cannot be
answered (frames instead of a file, no options) is refused with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from videotapestry.errors import ConfigError
from videotapestry.eval.records import ResultRecord
from videotapestry.integrations.lmms_docs import DocError, question_from_doc, video_from_visuals
from videotapestry.integrations.lmms_session import (
    LmmsSettings,
    failure_message,
    failure_response,
)

VIDEO = Path("/data/videos/abc.mp4")


def read(doc: dict, **where) -> object:
    return question_from_doc(
        doc,
        task=where.get("task", "videomme"),
        split="test",
        doc_id=where.get("doc_id", 3),
        video=VIDEO,
    )


def test_video_mme_record_keeps_its_labelled_options_and_gold_letter() -> None:
    doc = {
        "videoID": "abc",
        "question_id": "001-1",
        "duration": "long",
        "domain": "Knowledge",
        "task_type": "OCR Problems",
        "question": "What code is on the door? ",
        "options": ["A. 7457", "B. 4471", "C. 4417", "D. 1875"],
        "answer": "C",
    }
    q = read(doc)
    assert q.question == "What code is on the door?"
    assert q.options == ["A. 7457", "B. 4471", "C. 4417", "D. 1875"]
    assert q.answer == "C" and q.categories == ["OCR Problems"] and q.duration_group == "long"
    assert q.video == str(VIDEO) and q.video_id == "abc"
    assert q.extra == {"lmms_task": "videomme", "split": "test", "doc_id": 3, "source_id": "001-1"}
    assert q.id.startswith("videomme.test.3.")


def test_longvideobench_option_keys_stop_at_the_first_absent_one() -> None:
    doc = {
        "id": "86CxyhFV9MI_0",
        "question": "Which colour is the car?",
        "option0": "red",
        "option1": "blue",
        "option2": "green",
        "option3": "N/A",
        "option4": "N/A",
        "correct_choice": 1,
        "duration_group": 600,
        "question_category": "S2E",
    }
    q = read(doc, task="longvideobench_val_v")
    assert q.options == ["A. red", "B. blue", "C. green"]
    assert q.answer == "B" and q.duration_group == "600" and q.categories == ["S2E"]


def test_egoschema_labelled_list_and_raw_option_keys_read_alike() -> None:
    lmms_form = {
        "question": "What is c doing?",
        "option": ["A. cooking", "B. cleaning", "C. reading", "D. sleeping", "E. walking"],
        "answer": "2",
        "video_idx": "abc",
    }
    raw_form = {"question": "What is c doing?"} | {
        f"option {i}": text
        for i, text in enumerate(["cooking", "cleaning", "reading", "sleeping", "walking"])
    }
    a, b = read(lmms_form, task="egoschema"), read(raw_form, task="egoschema")
    assert a.options == b.options and len(a.options) == 5 and a.options[2] == "C. reading"
    assert a.answer == "C" and b.answer is None


def test_lvbench_options_inlined_in_the_question_are_split_off() -> None:
    doc = {
        "uid": 17,
        "question": "What happens first?\n(A) a dog runs\n(B) a cat sleeps\n(C) rain\n(D) snow",
        "answer": "D",
        "question_type": ["temporal grounding", "reasoning"],
    }
    q = read(doc, task="lvbench")
    assert q.question == "What happens first?"
    assert q.options == ["A. a dog runs", "B. a cat sleeps", "C. rain", "D. snow"]
    assert q.answer == "D" and q.categories == ["temporal grounding", "reasoning"]
    assert q.extra["source_id"] == 17


def test_plain_option_texts_are_labelled_by_position() -> None:
    q = read({"question": "Where?", "candidates": ["C. elegans lab", "the park"]})
    assert q.options == ["A. C. elegans lab", "B. the park"]


def test_the_id_changes_with_the_question_so_a_resumed_run_never_reuses_another_answer() -> None:
    doc = {"question": "Where?", "options": ["A. here", "B. there"]}
    same = read(dict(doc))
    moved = read({**doc, "question": "When?"})
    assert read(doc).id == same.id
    assert moved.id != same.id and moved.id.rsplit(".", 1)[0] == same.id.rsplit(".", 1)[0]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"options": ["A. x", "B. y"]}, "no 'question' text"),
        ({"question": "Open-ended?"}, "no options found"),
        ({"question": "?", "options": ["A. x", "A. y"]}, "both have the letter A"),
    ],
)
def test_records_that_are_not_multiple_choice_questions_are_refused(doc, message) -> None:
    with pytest.raises(DocError, match=message):
        read(doc)


def test_visuals_must_be_one_local_video_file(tmp_path: Path) -> None:
    assert video_from_visuals([str(VIDEO)], "w") == VIDEO
    assert video_from_visuals("rel/v.mp4", "w") == Path.cwd() / "rel/v.mp4"
    with pytest.raises(DocError, match=r"Image instead of a video file path.*longvideobench_val_v"):
        video_from_visuals([Image.new("RGB", (4, 4))], "w")
    with pytest.raises(DocError, match="2 files"):
        video_from_visuals(["a.mp4", "b.mp4"], "w")
    with pytest.raises(DocError, match="remote"):
        video_from_visuals(["https://example.com/v.mp4"], "w")
    with pytest.raises(DocError, match="no visual"):
        video_from_visuals([], "w")


def test_model_args_become_settings_and_dotted_keys_overrides() -> None:
    settings = LmmsSettings.from_model_args(
        {
            "memory_root": "/m",
            "build_missing": True,
            "profile": "offline",
            "concurrency": 2,
            "models.default.model": "gpt-4o",
            "models.default.temperature": 0.2,
            "batch_size": 1,  # lmms-eval passes it to every model
        }
    )
    assert settings.memory_root == Path("/m") and settings.build_missing
    assert settings.profile == "offline" and settings.concurrency == 2
    assert settings.overrides == ("models.default.model=gpt-4o", "models.default.temperature=0.2")
    with pytest.raises(ConfigError, match="memory_root=DIR"):
        LmmsSettings.from_model_args({"profile": "offline"})
    with pytest.raises(ConfigError, match="unknown model_args key 'memroy_root'"):
        LmmsSettings.from_model_args({"memory_root": "/m", "memroy_root": "/m"})
    with pytest.raises(ConfigError, match="concurrency must be at least 1"):
        LmmsSettings.from_model_args({"memory_root": "/m", "concurrency": 0})
    with pytest.raises(ConfigError, match="build_missing must be true or false"):
        LmmsSettings.from_model_args({"memory_root": "/m", "build_missing": "maybe"})


def test_a_failed_question_answers_lmms_eval_with_its_error_in_lower_case() -> None:
    q = read({"question": "Where?", "options": ["A. here", "B. there"]})
    failed = ResultRecord.for_question(
        q,
        "full",
        status="failed",
        error="no memory at /data/Videos/CLIP_A/ (add build_missing=true)",
        error_type="MissingMemoryError",
    )
    message = failure_message(failed)
    assert message == (
        "MissingMemoryError: no memory at /data/Videos/CLIP_A/ (add build_missing=true)"
    )
    # No capital letter that an answer extraction could take for option A, C or D.
    assert failure_response(message) == (
        "[videotapestry error] missingmemoryerror: no memory at /data/videos/clip_a/ "
        "(add build_missing=true)"
    )
    assert failure_message(None) == "the question was not run"
