# Copyright: clusterforge contributors
# Apache License 2.0
"""clusterforge's opt-in accelerations: off unless a run asks for them, and said at -v either way.

Today there is one, jinja_code_cache. ansible-core compiles every template string it renders (a
task's arguments, its `when`, every variable whose value is a template) from scratch in each forked
worker, for each host and task, and throws the result away with the worker. The code Jinja
generates depends on the template's text and on compile-time facts (delimiters and other overrides,
extensions, ALLOW_EMBEDDED_TEMPLATES, and whether each filter or test the template names takes the
context, the eval context or the environment): with all of them in the key, the code can be shared
between the workers of one run. It wraps private ansible-core methods, so it is off by default
(the engine users get is stock ansible-core) and turns itself off on a core whose internals differ.

The shared code lives in memory (what the main process compiled, each forked worker inherits) and in
a directory made for the run (mkdtemp, mode 0700, every parent owned by root or the operator and
not writable by others unless sticky) that is removed when the playbook ends: nothing a template
contained (a templated -e secret) outlives the run, and no directory another user controls is ever
read. Each file holds its full key next to the code and is used only when that key matches.
bench/fleet.py measures the saving (setting project-accelerated).
"""

from __future__ import annotations

import atexit
import contextvars
import hashlib
import marshal
import os
import re
import shutil
import stat
import tempfile
import types
from pathlib import Path

from ansible import constants as C
from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: accelerate
type: aggregate
short_description: clusterforge's opt-in accelerations (off by default), and which are on
description:
  - "At -v, says which of clusterforge's accelerations are on: fork_warmup (public APIs only, on in
    clusterforge's ansible.cfg) and jinja_code_cache (opt-in)."
  - "jinja_code_cache: the Python code Jinja generates for a template is shared between the forked
    workers of one run (memory, then a private directory made for the run and removed at its end),
    keyed by the template's text and every compile-time setting that changes the code. It wraps
    ansible-core internals (2.19's templating), so it is off unless turned on, and off with a note at
    -v on a core whose internals differ or while template debugging is on."
options:
  enabled:
    description: Turn the opt-in accelerations on for this run.
    type: bool
    default: false
    env:
      - name: CLUSTERFORGE_ACCELERATE
    ini:
      - section: clusterforge
        key: accelerate
requirements: [enable in callbacks_enabled (clusterforge's ansible.cfg does)]
"""

# Templates larger than this are compiled as usual: they are rare (whole files), and the cache
# is meant for the many small strings every task templates.
MAX_SOURCE_CHARS = 256 * 1024
MAX_IN_MEMORY = 8192

# Names a template may use as a filter (`x | name`, `{% filter name %}`) or a test (`x is [not] name`).
# Jinja's code generator asks each one for its pass_context/pass_environment flag, so the flags of
# these names are part of the key. A name matched in a string literal only makes the key stricter.
_FILTER_NAMES = re.compile(r"(?:\||\bfilter)\s*([A-Za-z_][\w.]*)")
_TEST_NAMES = re.compile(r"\bis\s+(?:not\s+)?([A-Za-z_][\w.]*)")

# The key of the expression being compiled, between compile_expression and the compile() it calls
# with a node tree (which has no text to key on).
_PENDING_EXPRESSION: contextvars.ContextVar[str | None] = contextvars.ContextVar("jinja_code_cache_expr", default=None)


def trusted_directory(directory: Path) -> bool:
    """The directory is the operator's own, mode 0700, and no other user can replace it: each parent
    is owned by root or the operator and is not writable by others unless sticky (/tmp)."""
    try:
        info = directory.lstat()
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            return False
        for parent in directory.resolve().parents:
            info = parent.stat()
            if info.st_uid not in (0, os.getuid()):
                return False
            if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
                return False
    except OSError:
        return False
    return True


class CodeCache:
    """Code objects by key: a bounded dict in memory, and one file per key in a directory that
    belongs to this run (None: memory only)."""

    def __init__(self, directory: Path | None):
        self.memory: dict[str, types.CodeType] = {}
        self.directory = directory if directory is not None and trusted_directory(directory) else None

    @staticmethod
    def material(*parts: object) -> str:
        return repr(parts)

    @staticmethod
    def key(material: str) -> str:
        return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()

    def get(self, material: str) -> types.CodeType | None:
        key = self.key(material)
        code = self.memory.get(key)
        if code is not None or self.directory is None:
            return code
        try:
            stored, code = marshal.loads((self.directory / key).read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            return None  # not there yet, or a torn or foreign file: compile as usual
        # Bound to its full key: a file put there for another template is never used for this one.
        if stored != material or not isinstance(code, types.CodeType):
            return None
        self._remember(key, code)
        return code

    def put(self, material: str, code: types.CodeType) -> None:
        key = self.key(material)
        self._remember(key, code)
        if self.directory is None:
            return
        # Written to a temporary file and renamed: workers in parallel never read half a file.
        try:
            handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=".tmp-")
            with os.fdopen(handle, "wb") as output:
                output.write(marshal.dumps((material, code)))
            os.replace(temporary, self.directory / key)
        except OSError:
            pass  # a full disk costs the saving, not the run

    def _remember(self, key: str, code: types.CodeType) -> None:
        if len(self.memory) >= MAX_IN_MEMORY:
            self.memory.clear()
        self.memory[key] = code


def install(cache: CodeCache) -> str | None:
    """Wraps AnsibleEnvironment's compile and compile_expression with `cache`. Returns why not,
    where it cannot (an ansible-core whose internals differ)."""
    try:
        from ansible._internal._templating._jinja_bits import (
            _TEMPLATE_OVERRIDE_FIELD_NAMES,
            AnsibleEnvironment,
            _TemplateCompileContext,
        )
        from ansible._internal._templating._jinja_common import _TemplateConfig
        from jinja2 import nodes
        from jinja2.environment import TemplateExpression
        from jinja2.utils import _PassArg
    except ImportError as missing:
        return f"ansible-core's templating internals differ from 2.19's ({missing})"
    if getattr(AnsibleEnvironment, "_clusterforge_code_cache", None) is not None:
        AnsibleEnvironment._clusterforge_code_cache = cache  # installed already: swap the cache
        return None

    original_compile = AnsibleEnvironment.compile
    original_compile_expression = AnsibleEnvironment.compile_expression

    def plugin_flags(plugins, names: set[str]) -> tuple:
        """What the code generator reads of each named filter or test: missing, or its pass flag."""
        flags = []
        for name in sorted(names):
            plugin = plugins.get(name)
            flags.append((name, "missing" if plugin is None else str(_PassArg.from_obj(plugin))))
        return tuple(flags)

    def settings(env, source: str) -> tuple:
        """What the generated code depends on besides the template's text."""
        context = _TemplateCompileContext.current(optional=True)
        return (
            type(env).__qualname__,
            tuple(getattr(env, name) for name in _TEMPLATE_OVERRIDE_FIELD_NAMES),
            env.optimized,
            env.is_async,
            tuple(sorted(env.extensions)),
            bool(context and context.escape_backslashes),
            _TemplateConfig.allow_embedded_templates,
            plugin_flags(env.filters, set(_FILTER_NAMES.findall(source))),
            plugin_flags(env.tests, set(_TEST_NAMES.findall(source))),
        )

    def cacheable(env, source) -> bool:
        return not env._debuggable_template_source and len(source) <= MAX_SOURCE_CHARS

    def compile(self, source, name=None, filename=None, raw=False, defer_init=False):
        active = AnsibleEnvironment._clusterforge_code_cache
        if isinstance(source, nodes.Template):
            material = _PENDING_EXPRESSION.get()
            _PENDING_EXPRESSION.set(None)  # only the expression's own compile, not nested ones
        elif isinstance(source, str) and cacheable(self, source):
            text = str(source)
            material = active.material("template", text, name, filename, defer_init, settings(self, text))
        else:
            material = None
        if material is None or raw:
            return original_compile(self, source, name, filename, raw, defer_init)
        code = active.get(material)
        if code is None:
            code = original_compile(self, source, name, filename, raw, defer_init)
            if isinstance(code, types.CodeType):
                active.put(material, code)
        return code

    def compile_expression(self, source, undefined_to_none=True):
        active = AnsibleEnvironment._clusterforge_code_cache
        if not isinstance(source, str) or not cacheable(self, source):
            return original_compile_expression(self, source, undefined_to_none)
        text = str(source)
        material = active.material("expression", text, settings(self, text))
        code = active.get(material)
        if code is None:
            token = _PENDING_EXPRESSION.set(material)
            try:
                return original_compile_expression(self, source, undefined_to_none)
            finally:
                _PENDING_EXPRESSION.reset(token)
        template = self.template_class.from_code(self, code, self.make_globals(None), None)
        return TemplateExpression(template, undefined_to_none)

    AnsibleEnvironment._clusterforge_code_cache = cache
    AnsibleEnvironment.compile = compile
    AnsibleEnvironment.compile_expression = compile_expression
    return None


class RunDirectory:
    """A private directory for one run's shared code, removed when the run ends (by the process
    that made it: forked workers exit without running atexit, and are told apart by pid anyway)."""

    def __init__(self):
        self.owner = os.getpid()
        self.path: Path | None = Path(tempfile.mkdtemp(prefix="clusterforge-jinja-code-"))
        atexit.register(self.remove)

    def remove(self) -> None:
        if self.path is not None and os.getpid() == self.owner:
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = None


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "accelerate"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._run_directory: RunDirectory | None = None
        self._code_cache = "off"

    def set_options(self, task_keys=None, var_options=None, direct=None):
        super().set_options(task_keys=task_keys, var_options=var_options, direct=direct)
        # Options are known here, in the main process, before any worker is forked.
        if self.get_option("enabled") and self._run_directory is None:
            self._run_directory = RunDirectory()
            reason = install(CodeCache(self._run_directory.path))
            self._code_cache = f"off ({reason})" if reason else "on"

    def v2_playbook_on_start(self, playbook):
        enabled = [name.strip() for name in C.CALLBACKS_ENABLED]
        warmup = "on" if "fork_warmup" in enabled else "off"
        code_cache = self._code_cache
        if code_cache == "off":
            code_cache += "; CLUSTERFORGE_ACCELERATE=1 or clusterforge run --accelerate turns it on"
        self._display.v(f"clusterforge accelerations: fork_warmup {warmup}; jinja_code_cache {code_cache}")

    def v2_playbook_on_stats(self, stats):
        if self._run_directory is not None:
            self._run_directory.remove()
