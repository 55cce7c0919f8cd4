"""Prompt registry: one Jinja template file per role, strict rendering, stable hashes.

Researchers swap prompts more than code, so every prompt is a file (``prompts/<name>.jinja``)
with a ``system`` and a ``user`` block. A user directory overrides shipped templates by file
name (partials such as ``_no_steering.jinja`` included). Rendering is strict: a variable
the template uses but the caller did not pass is an error, never an empty string. Each
rendered prompt carries a hash of its exact text so results can say which prompt made them.

A registry reads each file once, when it is first used, and keeps its text: every prompt of a
run (or of a server's life) comes from one version of the file, which the results' hashes
name, and rendering does no file I/O on the event loop. An edited template takes effect in
the next registry (the next run, or a restarted server).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from jinja2 import meta

from videotapestry.errors import PromptError
from videotapestry.resources import prompts_dir

TEMPLATE_SUFFIX = ".jinja"
BLOCKS = ("system", "user")
#: Variables a caller may leave out, and what a template then sees: the earlier turns of a
#: conversation (``_question.jinja``), which a question asked on its own does not have, so a
#: script or a user's template written before conversations renders as it did; and whether
#: an answer prompt asks for citations (``answer.citations``), on unless a caller says so, as
#: the answer prompts did before the switch; and the stored texts a decision reads besides
#: the refined ones (``agents.decision_context: full``), none unless a caller passes them.
OPTIONAL_VARIABLES: dict[str, object] = {
    "earlier_turns": (),
    "citations": True,
    "old_memories": "",
}


def short_hash(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class PromptSource:
    """Where a prompt name resolves to, and whether a user override shadows the shipped file."""

    name: str
    path: Path
    overridden: bool


@dataclass(frozen=True)
class RenderedPrompt:
    name: str
    system: str
    user: str
    template_path: str
    template_hash: str
    hash: str
    overridden: bool = False


class PromptRegistry:
    """Resolves, inspects and renders the prompt templates of one run."""

    def __init__(self, override_dir: str | Path | None = None, base_dir: Path | None = None):
        self.base_dir = Path(base_dir) if base_dir else prompts_dir()
        self.override_dir = Path(override_dir).expanduser() if override_dir else None
        if self.override_dir is not None and not self.override_dir.is_dir():
            raise PromptError(f"prompt override directory {self.override_dir} does not exist")
        search = [str(d) for d in (self.override_dir, self.base_dir) if d is not None]
        self._files = jinja2.FileSystemLoader(search)
        #: (file name, its text) -> (the variables it reads, the templates it includes).
        self._parsed: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {}
        self._sources: dict[str, PromptSource] = {}
        self._texts: dict[str, str] = {}
        self._env = jinja2.Environment(
            # Templates (and the partials they include) compile from the texts read once.
            loader=jinja2.FunctionLoader(self._compiled_source),
            auto_reload=False,
            undefined=jinja2.StrictUndefined,
            autoescape=False,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=False,
        )

    def names(self) -> list[str]:
        """Role prompt names (partials whose file name starts with ``_`` are not roles)."""
        found: set[str] = set()
        for directory in (self.base_dir, self.override_dir):
            if directory is not None:
                found.update(
                    p.stem
                    for p in directory.glob(f"*{TEMPLATE_SUFFIX}")
                    if not p.stem.startswith("_")
                )
        return sorted(found)

    def resolve(self, name: str) -> PromptSource:
        found = self._sources.get(name)
        if found is None:
            found = self._sources[name] = self._find(name)
        return found

    def _find(self, name: str) -> PromptSource:
        filename = f"{name}{TEMPLATE_SUFFIX}"
        if self.override_dir is not None and (self.override_dir / filename).is_file():
            return PromptSource(name, self.override_dir / filename, overridden=True)
        if (self.base_dir / filename).is_file():
            return PromptSource(name, self.base_dir / filename, overridden=False)
        raise PromptError(f"no prompt named {name!r}; available: {', '.join(self.names())}")

    def source(self, name: str) -> str:
        return self._text(f"{self.resolve(name).name}{TEMPLATE_SUFFIX}")

    def _compiled_source(self, filename: str) -> str | None:
        try:
            return self._text(filename)
        except PromptError:
            return None  # jinja's TemplateNotFound

    def _text(self, filename: str) -> str:
        """A template file's text as the loader finds it (override first), read once."""
        text = self._texts.get(filename)
        if text is None:
            try:
                text = self._texts[filename] = self._files.get_source(self._env, filename)[0]
            except jinja2.TemplateNotFound:
                raise PromptError(f"prompt partial {filename!r} not found") from None
        return text

    def variables(self, name: str) -> set[str]:
        """Variables the template (and the partials it includes) reads from the caller."""
        return self._variables(f"{self.resolve(name).name}{TEMPLATE_SUFFIX}", set())

    def prepare(self) -> None:
        """Read, parse and compile every role template now (each is otherwise done at its
        first render), so that a template error shows before any question too."""
        for name in self.names():
            self.variables(name)
            self._template(self.resolve(name))

    def render(self, name: str, /, **variables: Any) -> RenderedPrompt:
        source = self.resolve(name)
        needed = self.variables(name)
        variables = {
            **{k: v for k, v in OPTIONAL_VARIABLES.items() if k in needed},
            **variables,
        }
        missing = sorted(needed - set(variables))
        if missing:
            raise PromptError(
                f"prompt {name!r} ({source.path}) needs variable(s) {', '.join(missing)} "
                "that were not passed"
            )
        template = self._template(source)
        blocks = {}
        try:
            context = template.new_context(dict(variables))
            for block in BLOCKS:
                blocks[block] = "".join(template.blocks[block](context)).strip()
        except jinja2.UndefinedError as exc:
            raise PromptError(f"prompt {name!r} ({source.path}): {exc.message}") from None
        text = self.source(name)
        return RenderedPrompt(
            name=name,
            system=blocks["system"],
            user=blocks["user"],
            template_path=str(source.path),
            template_hash=short_hash(text),
            hash=short_hash(name, blocks["system"], blocks["user"]),
            overridden=source.overridden,
        )

    def _template(self, source: PromptSource) -> jinja2.Template:
        try:
            template = self._env.get_template(source.path.name)
        except jinja2.TemplateSyntaxError as exc:
            raise PromptError(
                f"prompt template {exc.filename or source.path} line {exc.lineno}: {exc.message}"
            ) from None
        absent = [block for block in BLOCKS if block not in template.blocks]
        if absent:
            raise PromptError(
                f"prompt template {source.path} must define "
                + " and ".join(f"{{% block {b} %}}" for b in absent)
            )
        return template

    def _variables(self, filename: str, seen: set[str]) -> set[str]:
        if filename in seen:
            return set()
        seen.add(filename)
        text = self._text(filename)
        parsed = self._parsed.get(filename)  # parsed once: it is rendered many times a run
        if parsed is None:
            try:
                ast = self._env.parse(text)
            except jinja2.TemplateSyntaxError as exc:
                raise PromptError(
                    f"prompt template {filename} line {exc.lineno}: {exc.message}"
                ) from None
            included = tuple(child for child in meta.find_referenced_templates(ast) if child)
            parsed = self._parsed[filename] = (
                frozenset(meta.find_undeclared_variables(ast)),
                included,
            )
        own, partials = parsed
        found = set(own)
        for child in partials:
            found |= self._variables(child, seen)
        return found
