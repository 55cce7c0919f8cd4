"""Do two versions of the code produce the same outputs? A check for refactors.

Runs the same offline commands with the code of a git ref (checked out into a temporary
worktree) and with this working tree, then compares everything they wrote, file by file:
the demo (its memory, its JSON report, its HTML pages), ``build-memory`` with a MemDreamer
export, ``import-memdreamer`` of the shipped sample, ``ask`` with its trace, ``inspect``
(tree, JSON, HTML), and an ``eval`` run (results, traces, report). Everything runs on the
offline model, so the outputs are deterministic except for wall-clock figures, run ids and
the temporary directories' own paths, which are blanked before comparing (the list is in
``VOLATILE_KEYS`` and ``_normalize_text``).

    python scripts/compare_outputs.py --base origin/main      # exit 0 when all are equal
    python scripts/compare_outputs.py --base HEAD~3 --keep out/   # keep both trees of outputs

Both runs use this interpreter and its installed dependencies; only the package code
differs (the ref's tree comes first on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import difflib
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Caches, not outputs: their rows carry the times they were written.
SKIPPED_SUFFIXES = {".sqlite", ".sqlite-wal", ".sqlite-shm"}
#: A memory's ``build/`` directory holds the builder's resume checkpoints, keyed by hashes of
#: their inputs (the offline model's rules revision, the settings by field name): any edit to
#: the offline rules or a renamed key changes the keys while the memory stays the same.
SKIPPED_DIRS = {"build"}

#: JSON keys whose values are wall-clock figures, ids drawn at random, host details, or the
#: hash of a config dump (the dump itself is compared).
VOLATILE_KEYS = re.compile(
    r"(^|_)(s|ms|seconds|elapsed|latency|latency_s|latency_ms|created|created_at|started|"
    r"started_at|finished|finished_at|time_s|wall_s|timestamp|run_id|reassembled_from|"
    r"host|pid|python|platform|command|written_at|duration_ms|eta|config_hash)$"
)
#: Objects whose every value is a wall-clock figure (per-stage seconds of a build).
VOLATILE_OBJECTS = {"timings"}
#: Keys that look volatile by the pattern above but hold video times (deterministic).
STABLE_KEYS = {
    "start_s",
    "end_s",
    "t_s",
    "duration_s",
    "video_duration_s",
    "code_at_s",
    "time_s",
    "min_s",
    "max_s",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="git ref to compare this tree with")
    parser.add_argument("--keep", metavar="DIR", help="keep both output trees under DIR")
    args = parser.parse_args(argv)

    work = Path(args.keep).resolve() if args.keep else Path(tempfile.mkdtemp(prefix="vt-cmp-"))
    work.mkdir(parents=True, exist_ok=True)
    tree = work / "base-tree"
    if tree.exists():
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False)
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(tree), args.base],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    try:
        base = produce(tree, work / "base")
        head = produce(ROOT, work / "head")
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False)
    differences = compare(base, head, tree, ROOT)
    for line in differences:
        print(line)
    files = sum(1 for p in head.rglob("*") if p.is_file())
    print(
        f"{files} files compared: "
        + ("identical" if not differences else f"{len(differences)} differences")
    )
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if not differences else 1


def produce(code: Path, out: Path) -> Path:
    """Run every command with the package code of ``code``; outputs under ``out``."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    env = {
        **os.environ,
        "PYTHONPATH": str(code),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "XDG_CACHE_HOME": str(out / ".cache"),
        "PYTHONHASHSEED": "0",
    }
    env.pop("OPENAI_API_KEY", None)
    demo_data = code / "videotapestry" / "demo" / "data"
    video = demo_data / "sample.mp4"
    questions = json.loads((demo_data / "questions.json").read_text())["questions"]

    def run(name: str, *argv: str, ok: tuple[int, ...] = (0,)) -> None:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from videotapestry.cli import main; sys.exit(main(sys.argv[1:]))",
                *argv,
            ],
            cwd=out,
            env=env,
            capture_output=True,
            text=True,
        )
        (out / f"{name}.stdout").write_text(done.stdout)
        if done.returncode not in ok:
            raise SystemExit(
                f"{name} exited {done.returncode} with the code of {code}:\n{done.stderr[-3000:]}"
            )

    offline = ("--profile", "offline")
    run("demo", "demo", "--cache-dir", "demo", "--html", "pages", "--json", "--quiet")
    memory = next((out / "demo").glob("**/manifest.json")).parent
    first = questions[0]
    ask = ["--memory", str(memory), "--question", first["question"]]
    for option in first["options"]:
        ask += ["--option", option]
    run(
        "ask",
        "ask",
        str(video),
        *ask,
        "--trace",
        "ask-trace.json",
        "--json",
        "--quiet",
        "--allow-degraded",
        *offline,
        "-o",
        "cache.enabled=false",
    )
    run("inspect-tree", "inspect", str(memory))
    run("inspect-json", "inspect", str(memory), "--json", "--html", "memory.html")
    run("inspect-trace", "inspect", "ask-trace.json", "--html", "trace.html")
    sample = ROOT.parent / "shared" / "fixtures" / "memdreamer_sample"
    if sample.is_dir():
        run("import", "import-memdreamer", str(sample), "imported", *offline)
        run("inspect-imported", "inspect", "imported", "--json")
    clip = out / "clip.mp4"
    _cut(video, clip, seconds=150)
    run(
        "build",
        "build-memory",
        str(clip),
        "built",
        "--export-memdreamer",
        "built-md",
        "--quiet",
        "--json",
        *offline,
    )
    rows = [
        {
            "id": q["id"],
            "video": "sample.mp4",
            "question": q["question"],
            "options": q["options"],
            "answer": q["answer"],
        }
        for q in questions
    ]
    (out / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (out / "memories").mkdir()
    shutil.copytree(memory, out / "memories" / "sample")
    run(
        "eval",
        "eval",
        "--benchmark",
        "jsonl",
        "--annotations",
        "questions.jsonl",
        "--videos",
        str(demo_data),
        "--memories",
        "memories",
        "--out",
        "run",
        "--variant",
        "full,refined_super_only,static_memory",
        "--quiet",
        *offline,
        "-o",
        "cache.enabled=false",
        ok=(0, 1, 3),
    )
    run("eval-report", "eval-report", "run")
    shutil.rmtree(out / ".cache", ignore_errors=True)
    (out / "clip.mp4").unlink()
    return out


def _cut(video: Path, target: Path, *, seconds: float) -> None:
    """The first ``seconds`` of the demo video with its audio (a short build)."""
    import av

    with av.open(str(video)) as source, av.open(str(target), "w") as sink:
        streams = {
            s.index: sink.add_stream_from_template(s)
            for s in source.streams
            if s.type in ("video", "audio")
        }
        for packet in source.demux(*[source.streams[i] for i in streams]):
            if packet.dts is None:
                continue
            if packet.pts is not None and float(packet.pts * packet.time_base) > seconds:
                continue
            packet.stream = streams[packet.stream.index]
            sink.mux(packet)


def compare(base: Path, head: Path, base_code: Path, head_code: Path) -> list[str]:
    """The differences between the two output trees; the base's config dumps are read
    under the head's renamed keys first (a renamed key is a documented change)."""
    renames = _renamed_keys()
    lines: list[str] = []
    names = sorted(
        {p.relative_to(base) for p in base.rglob("*") if p.is_file()}
        | {p.relative_to(head) for p in head.rglob("*") if p.is_file()}
    )
    for name in names:
        a, b = base / name, head / name
        if not a.exists() or not b.exists():
            lines.append(f"only in {'base' if a.exists() else 'head'}: {name}")
            continue
        if name.suffix in SKIPPED_SUFFIXES or SKIPPED_DIRS & set(name.parts[:-1]):
            continue
        left = _normalized(a, base, base_code, renames)
        right = _normalized(b, head, head_code, ())
        if left != right:
            if isinstance(left, str) and isinstance(right, str):
                diff = difflib.unified_diff(
                    left.splitlines(), right.splitlines(), "base", "head", n=1, lineterm=""
                )
                lines.append(f"differs: {name}\n" + "\n".join(list(diff)[:40]))
            else:
                lines.append(f"differs: {name} (binary)")
    return lines


def _renamed_keys() -> tuple[tuple[tuple[str, ...], tuple[tuple[str, ...], ...]], ...]:
    """(old dotted path, new paths) of every config key this tree renamed, if it has any."""
    sys.path.insert(0, str(ROOT))
    try:
        from videotapestry.config.renames import RENAMED_KEYS
    except ImportError:
        return ()
    finally:
        sys.path.remove(str(ROOT))
    return tuple(
        (tuple(r.old.split(".")), tuple(tuple(n.split(".")) for n in r.new)) for r in RENAMED_KEYS
    )


def _rename(value, renames):
    """``value`` with the old keys of every config dump in it (a mapping with ``models`` and
    ``variant``) moved to their new names, and a manifest's model-by-role table too."""
    if isinstance(value, list):
        return [_rename(item, renames) for item in value]
    if not isinstance(value, dict):
        return value
    value = {key: _rename(item, renames) for key, item in value.items()}
    if "models" in value and "variant" in value:
        for old, new in renames:
            _move(value, old, new)
    models = value.get("models")
    if isinstance(models, dict) and all(isinstance(m, str) for m in models.values()):
        value["models"] = _rename_roles(models, renames)  # a model-by-role table
    return value


def _rename_roles(models: dict, renames) -> dict:
    roles = {"models": {"roles": dict(models)}}
    for old, new in renames:
        _move(roles, old, new)
    return roles["models"]["roles"]


def _move(tree: dict, old: tuple[str, ...], new: tuple[tuple[str, ...], ...]) -> None:
    node = tree
    for part in old[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            return
    if not isinstance(node, dict) or old[-1] not in node:
        return
    moved = node.pop(old[-1])
    for path in new:
        target = tree
        for part in path[:-1]:
            target = target.setdefault(part, {})
        target[path[-1]] = moved


def _normalized(path: Path, top: Path, code: Path, renames=()) -> str | bytes:
    data = path.read_bytes()
    if path.suffix in {".npy", ".mp4", ".png", ".jpg"}:
        return data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    text = text.replace(str(code), "<CODE>").replace(str(top), "<OUT>")
    if path.suffix in {".json", ".jsonl", ".stdout"}:
        try:
            return json.dumps(_blank(_rename(json.loads(text), renames)), indent=1, sort_keys=True)
        except json.JSONDecodeError:
            pass
        out = []
        # Lines of a results file are appended as questions finish: their order is not.
        lines = sorted(text.splitlines()) if path.suffix == ".jsonl" else text.splitlines()
        for line in lines:
            try:
                record = _rename(json.loads(line), renames)
                out.append(json.dumps(_blank(record), indent=1, sort_keys=True))
            except json.JSONDecodeError:
                out.append(_normalize_text(line, renames))
        return "\n".join(out)
    return _normalize_text(text, renames)


#: A report's line of models by role: "- models: answer `m`, builder_clip `m`, ...".
_MODELS_LINE = re.compile(r"^(- models: )(.*)$", re.M)


def _models_line(match: re.Match, renames) -> str:
    models = dict(re.findall(r"(\w+) `([^`]*)`", match.group(2)))
    roles = _rename_roles(models, renames)
    return match.group(1) + ", ".join(f"{r} `{roles[r]}`" for r in sorted(roles))


_MANIFEST = re.compile(r"(<summary>Manifest</summary><pre>)(.*?)(</pre>)", re.S)


def _manifest_html(match: re.Match, renames) -> str:
    """A memory page's manifest, read as the JSON it shows."""
    manifest = _rename(json.loads(html.unescape(match.group(2))), renames)
    return match.group(1) + json.dumps(_blank(manifest), indent=1, sort_keys=True) + match.group(3)


def _normalize_text(text: str, renames) -> str:
    text = _MANIFEST.sub(lambda m: _manifest_html(m, renames), text)
    text = _MODELS_LINE.sub(lambda m: _models_line(m, renames), text)
    # Wall-clock figures in text reports and pages: dates, seconds, latency columns.
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(\+00:00|Z)?", "<DATE>", text)
    text = re.sub(r"(model time|·) \d+(\.\d+)? s\b", r"\1 <T> s", text)
    text = re.sub(r"<td>\d+\.\d\d</td>", "<td><T></td>", text)
    text = re.sub(r"run <code>[0-9a-f]{12}</code>", "run <code><ID></code>", text)
    text = re.sub(r"config hash: `[0-9a-f]+`", "config hash: <HASH>", text)
    text = re.sub(
        r"((?:&quot;|\")(?:wall_s|latency_s|elapsed_s)(?:&quot;|\"): )[0-9.]+", r"\1<T>", text
    )
    text = re.sub(r"(&quot;timings&quot;: )\{[^}]*\}", r"\1<T>", text)
    # The latency columns of a report's usage table (mean, p50, p95 seconds).
    text = re.sub(
        r"(\| [\d.,]+ )\| [\d.]+ \| [\d.]+ \| [\d.]+ (\| [\d,]+ \|)$",
        r"\1| <T> \2",
        text,
        flags=re.M,
    )
    return text


def _blank(value):
    if isinstance(value, dict):
        return {
            key: "<volatile>"
            if key in VOLATILE_OBJECTS
            or (key not in STABLE_KEYS and VOLATILE_KEYS.search(key))
            or (key.endswith("_s") and _measured(item))
            else _blank(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_blank(item) for item in value]
    return value


def _measured(value: object) -> bool:
    """A float with the many decimals of a clock reading (video times are whole or short)."""
    return isinstance(value, float) and len(repr(value).split(".")[-1]) > 4


if __name__ == "__main__":
    sys.exit(main())
