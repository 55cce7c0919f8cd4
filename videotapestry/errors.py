"""The framework's exception hierarchy.

Every error a user can trigger through bad input (config, prompts, a model endpoint) is one
of these, so callers can catch ``VideoTapestryError`` and so messages can name the key,
file or endpoint involved and say what to do, instead of surfacing a traceback from deep
inside a library.
"""

from __future__ import annotations


class VideoTapestryError(Exception):
    """Base class of every error raised on purpose by videotapestry."""


class ConfigError(VideoTapestryError):
    """A configuration file, profile or override is invalid."""


class PromptError(VideoTapestryError):
    """A prompt template is missing, unreadable or cannot be rendered."""


class QuestionError(VideoTapestryError, ValueError):
    """A question or its options cannot be answered as given (empty, too few, duplicate letters);
    raised before any model call."""


class ResourceError(VideoTapestryError):
    """A file shipped with the package (prompt, config) cannot be found."""


class RetrievalError(VideoTapestryError, ValueError):
    """Evidence for PACE-Mem or a baseline is malformed: NaN or zero embeddings, shapes that
    do not match, bad time ranges. Messages name the clip or record id involved."""


class OptionalDependencyError(VideoTapestryError, ImportError):
    """A feature needs an optional extra that is not installed; the message names the extra."""


class MemoryFormatError(VideoTapestryError):
    """A stored video memory (native or MemDreamer layout) is missing, malformed or inconsistent.

    Messages name the file and the field (or node id) so a user can fix or rebuild the memory.
    """


class LibraryError(VideoTapestryError):
    """A video library cannot be read, updated or searched as asked (a missing root, an
    empty query, a library another process is updating)."""


class MemoryNodeNotFoundError(VideoTapestryError, LookupError):
    """A caller asked a loaded memory for a node id it does not hold."""


class FingerprintMismatchError(VideoTapestryError):
    """A memory was built from a different video than the one it is being used with."""


class ModelCallError(VideoTapestryError):
    """A call to a model endpoint failed after the configured retries.

    ``role`` and ``endpoint`` are kept so a level agent can log which call failed and apply
    its documented fallback. ``recoverable`` is False for failures that no fallback can
    answer around (a refused key, an unreachable server, a request the program built wrong):
    those stop the question instead of producing fallback answers for every call.
    """

    recoverable = True

    def __init__(
        self,
        message: str,
        *,
        role: str | None = None,
        endpoint: str | None = None,
        recoverable: bool | None = None,
    ):
        super().__init__(message)
        self.role = role
        self.endpoint = endpoint
        if recoverable is not None:
            self.recoverable = recoverable


class ModelTimeoutError(ModelCallError):
    """The endpoint did not answer within the configured timeout (after retries)."""


class ModelRateLimitError(ModelCallError):
    """The endpoint kept answering 429 after the configured retries."""


class ModelServerError(ModelCallError):
    """The endpoint answered 5xx after the configured retries."""


class ModelConnectionError(ModelCallError):
    """The endpoint could not be reached (wrong base URL, server down)."""

    recoverable = False


class ModelAuthError(ModelCallError):
    """The endpoint refused the API key (401/403), or no key is set."""

    recoverable = False


#: Said by every missing-key error: the choice that needs no key at all.
NO_KEY_CHOICE = "or run the in-process offline model, which needs no key: --profile offline"


class ModelRequestError(ModelCallError):
    """The endpoint rejected the request itself (400/404/422).

    Usually the configuration is at fault (an unknown model name, a parameter the server
    does not support), and every later call would be rejected the same way, so by default
    this stops the question (``recoverable = False``). A rejection caused by this one
    request only (a prompt over the context length, a content filter) is raised with
    ``recoverable=True`` and takes the step's fallback.
    """

    recoverable = False


class ModelResponseError(ModelCallError):
    """The endpoint answered, but with no usable content (empty or missing message)."""


class ImageLimitError(ModelCallError):
    """A request carries more images than the configured per-call cap."""

    recoverable = False


class StructuredOutputError(ModelCallError):
    """The model's reply could not be parsed and validated, even after one repair retry.

    Level agents catch this to apply their documented fallback; ``raw_text`` and
    ``validation_error`` are kept for the trace.
    """

    def __init__(
        self,
        message: str,
        *,
        raw_text: str,
        validation_error: str,
        role: str | None = None,
        endpoint: str | None = None,
    ):
        super().__init__(message, role=role, endpoint=endpoint)
        self.raw_text = raw_text
        self.validation_error = validation_error


class VideoError(VideoTapestryError):
    """A video file cannot be used; the message names the file and what is wrong with it."""

    def __init__(self, message: str, *, path: str | None = None):
        super().__init__(message)
        self.path = path


class VideoNotFoundError(VideoError):
    """The video path does not exist (or is not a file)."""


class VideoUnreadableError(VideoError):
    """The file exists but is empty, truncated, corrupt, or not a video container."""


class NoDecodableFramesError(VideoError):
    """The container opens, but no frame (or not the requested frame) can be decoded."""


class VideoWindowError(VideoError):
    """A requested time window, timestamp or frame index is invalid or lies outside the video."""


class TranscriptionError(VideoTapestryError):
    """Speech recognition could not run: the model cannot be loaded or the audio decoded."""


class SubtitleError(VideoTapestryError):
    """A subtitle file is missing or cannot be parsed; the message names the file and line."""


class SampleVideoError(VideoTapestryError, ValueError):
    """The demo sample video cannot be generated as asked: a parameter the layout cannot
    honour, or speech assets that are missing or were made from other sentences."""


class DiskFullError(VideoTapestryError, OSError):
    """The file system of ``directory`` is full (or over quota): nothing more can be saved.

    Every writer replaces files whole (``videotapestry.files``), so what was finished before
    (checkpoints, run records, cache entries) is intact and a rerun resumes from it; the
    message names the directory to free space in. An ``OSError`` too, so code that already
    tolerates a failed write (a report that cannot be written) keeps doing so.
    """

    def __init__(self, directory: str, reason: str = "no space left on device") -> None:
        super().__init__(
            f"{reason} while writing in {directory}; free some space there (or choose "
            "another directory) and run the same command again: everything finished so far "
            "is kept and will not be redone"
        )
        self.directory = directory
