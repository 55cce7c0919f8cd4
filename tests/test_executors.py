"""The executor seam without Ray: choosing an executor, and what a job and a config look like
to a worker started in another directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from videotapestry.config import load_config
from videotapestry.errors import ConfigError
from videotapestry.executors import BuildJob, LocalExecutor, make_executor
from videotapestry.executors.tasks import portable_config


def test_the_config_chooses_the_executor_and_bad_names_are_refused() -> None:
    assert isinstance(make_executor(load_config()), LocalExecutor)
    with pytest.raises(ConfigError, match=r"executor\.kind"):
        load_config(overrides=["executor.kind=spark"])
    with pytest.raises(ConfigError, match="unknown executor 'spark'"):
        make_executor(load_config(), "spark")


def test_a_worker_gets_absolute_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "whisper-dir").mkdir()
    config = load_config(
        overrides=[
            "cache.path=cache/responses.sqlite",
            "asr.cache_dir=transcripts",
            "prompts.override_dir=my-prompts",
            "asr.whisper_model=whisper-dir",  # a local model directory
            "embedding.model=packaged:all-MiniLM-L6-v2",  # a model name stays a name
        ]
    )
    portable = portable_config(config)
    assert portable.cache.path == str(tmp_path / "cache" / "responses.sqlite")
    assert portable.asr.cache_dir == str(tmp_path / "transcripts")
    assert portable.prompts.override_dir == str(tmp_path / "my-prompts")
    assert portable.asr.whisper_model == str(tmp_path / "whisper-dir")
    assert portable.embedding.model == "packaged:all-MiniLM-L6-v2"
    # Everything else is the same config.
    assert portable.model_dump(exclude={"cache", "asr", "prompts"}) == config.model_dump(
        exclude={"cache", "asr", "prompts"}
    )

    job = BuildJob(Path("videos/a.mp4"), Path("memories/a"), Path("subs/a.srt")).absolute()
    assert job == BuildJob(
        tmp_path / "videos/a.mp4", tmp_path / "memories/a", tmp_path / "subs/a.srt"
    )
