"""The original taken from a git revision (`--original-ref REF`), and the refusal to compare
an original that has no legacy use.

On a migration pull request the legacy code is in the base branch, not in the working tree:
`--original-ref REF` exports ORIGINAL as it is at REF (`git archive`) and the working tree's
ORIGINAL is the candidate. In CI (`CI` set to true, as every CI service does) inside a git work
tree, REF defaults to the merge base of HEAD with the default branch (origin/HEAD, else
main/master): the code before the pull request.

A revision's files never change, so each commit is exported once into the cache
(`$HCMIGRATE_CACHE_DIR/original-refs/<commit>/`): the reference recorded from it is reused by
the next run on the same base (hcmigrate.verify.reference_cache).
"""

from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from hcmigrate.errors import HcmigrateError
from hcmigrate.files import read_regular
from hcmigrate.verify.generated_files import carry_generated
from hcmigrate.verify.outcome import CannotRun
from hcmigrate.verify.request import VerifyRequest
from hcmigrate.verify.workspace import project_files

DEFAULT_BRANCHES = ("origin/HEAD", "origin/main", "origin/master", "main", "master")
LEGACY_MODULE = "host_callback"


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, stdin=subprocess.DEVNULL
    )


def work_tree(path: Path) -> Path | None:
    """The root of the git work tree holding `path` (None: not in one, or no git)."""
    folder = path if path.is_dir() else path.parent
    try:
        top = _git(folder, "rev-parse", "--show-toplevel")
    except OSError:
        return None
    return Path(top.stdout.strip()) if top.returncode == 0 else None


def default_ref(repo: Path) -> tuple[str, str]:
    """The merge base of HEAD with the default branch (where a pull request's branch began),
    and that branch."""
    for branch in DEFAULT_BRANCHES:
        if _git(repo, "rev-parse", "--verify", "--quiet", f"{branch}^{{commit}}").returncode == 0:
            base = _git(repo, "merge-base", "HEAD", branch)
            if base.returncode != 0:
                raise CannotRun(
                    f"CI: HEAD and {branch} have no merge base in {repo} (a shallow clone? fetch "
                    "the history: actions/checkout with fetch-depth: 0), or pass --original-ref REF"
                )
            return base.stdout.strip(), branch
    raise CannotRun(
        f"CI: no default branch ({', '.join(DEFAULT_BRANCHES)}) in {repo} to take the original "
        "from (fetch it: actions/checkout with fetch-depth: 0), or pass --original-ref REF"
    )


def export(repo: Path, ref: str) -> tuple[Path, str]:
    """The files of `repo` at `ref`, exported once into the cache; (folder, commit)."""
    from hcmigrate.legacy_env import cache_dir

    commit = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if commit.returncode != 0:
        raise CannotRun(f"--original-ref {ref}: not a revision of the git repository {repo}")
    sha = commit.stdout.strip()
    target = cache_dir() / "original-refs" / sha
    if target.is_dir():
        return target, sha
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", "--format=tar", sha],
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )
    if archive.returncode != 0:
        raise CannotRun(
            f"--original-ref {ref}: git archive failed: {archive.stderr.decode(errors='replace').strip()}"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{sha}.", dir=target.parent))
    try:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(tmp, filter="data")
        try:
            os.replace(tmp, target)
        except OSError:  # another run exported the same commit first
            if not target.is_dir():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target, sha


@dataclass(frozen=True)
class FromGit:
    """Where the original came from: `label` names it in one line (`. at 3f2a9c1d0b7e`),
    `note` says how it was chosen and where it was exported."""

    label: str
    note: str


def from_git(req: VerifyRequest) -> tuple[VerifyRequest, FromGit | None]:
    """The request with its original taken from `--original-ref` (or, in CI, the merge base)
    and, unless `--candidate` says otherwise, the working tree's ORIGINAL as the candidate;
    and where it came from (None: the original is the working tree's, as asked)."""
    ref = req.original_ref
    repo = work_tree(req.original.resolve()) if req.original.exists() else None
    if ref is None and not (in_ci() and repo is not None):
        # (the working tree is the original: its last commit's day, when it has one)
        date = commit_date(repo, "HEAD") if repo is not None else None
        return dataclasses.replace(req, original_date=date), None
    if repo is None:
        raise CannotRun(f"--original-ref {ref}: {req.original} is not in a git work tree")
    how = f"--original-ref {ref}"
    if ref is None:
        ref, branch = default_ref(repo)
        how = f"CI: the merge base with {branch}"
    exported, sha = export(repo, ref)
    inside = req.original.resolve().relative_to(repo)
    original = exported / inside
    if not original.exists():
        raise CannotRun(f"--original-ref {ref}: {inside.as_posix() or '.'} is not in {sha[:12]}")
    label = f"{req.original} at {sha[:12]}"
    note = f"original: {label} ({how}), exported to {original}"
    carried = carry_generated(repo, exported)
    if carried:
        note += (
            "; carried over from the working tree, as the build generates them (git ignores "
            f"them, so the revision lacks them): {', '.join(carried)}"
        )
    deps_from, read = _requirement_files_of_the_base(req.project_deps_from, repo, exported)
    if read:
        note += f"; --project-deps-from read at {sha[:12]}: {', '.join(read)}"
    source = FromGit(label, note)
    return dataclasses.replace(
        req,
        original=original,
        candidate=req.candidate or req.original,
        original_date=commit_date(repo, sha),
        project_deps_from=deps_from,
    ), source


def _requirement_files_of_the_base(
    files: tuple[Path, ...], repo: Path, exported: Path
) -> tuple[tuple[Path, ...], list[str]]:
    """`--project-deps-from` files of the work tree read as the base revision has them: the
    reference runs the base, whose requirements a pull request may have changed (the migration
    adds hcmigrate's compat dependency, raises floors). A file the base lacks, or one outside
    the repository, is read as given. (the files, the repository paths read from the base)"""
    mapped, read = [], []
    for path in files:
        try:
            inside = path.resolve().relative_to(repo)
        except ValueError:
            mapped.append(path)
            continue
        in_base = exported / inside
        if in_base.is_file():
            mapped.append(in_base)
            read.append(inside.as_posix())
        else:
            mapped.append(path)
    return tuple(mapped), read


def commit_date(repo: Path, rev: str) -> str | None:
    """The day `rev` was committed (YYYY-MM-DD), None when git cannot say."""
    done = _git(repo, "show", "-s", "--format=%cs", rev)
    text = done.stdout.strip()
    return text if done.returncode == 0 and len(text) == 10 else None


def refuse_without_legacy_use(req: VerifyRequest, source: FromGit | None) -> None:
    """An original that never names host_callback has nothing to verify: the codemod changes
    nothing and the comparison would be the migrated code against itself (a green gate that
    proves nothing). Refused unless the user chose both sides (--candidate, no git revision)."""
    if req.candidate is not None and source is None:
        return
    if not (req.original.is_file() or req.original.is_dir()) or uses_legacy(req.original):
        return  # (what is missing or not a file or folder is refused later, unread)
    raise CannotRun(
        f"{source.label if source else req.original}: the original does not use jax.experimental.host_callback, so there "
        "is nothing to verify (an already-migrated tree compares with itself); take the "
        "original from the code before the migration: --original-ref REF"
    )


def uses_legacy(original: Path) -> bool:
    """Does the original (a file, or any Python file or notebook in a folder) name
    jax.experimental.host_callback at all?"""
    if original.is_file():
        return _names_legacy(original)
    return any(_names_legacy(path) for path in project_files(original, (".py", ".ipynb")))


def _names_legacy(path: Path) -> bool:
    """Does the file's code (not its docstrings or comments: a migrated module may still say
    what it replaced) name host_callback? A notebook, or a file Python cannot parse, by its
    text."""
    try:
        data = read_regular(path)
    except HcmigrateError:  # (a FIFO, a device, too large: not a source file)
        return False
    if LEGACY_MODULE.encode() not in data:
        return False
    if path.suffix != ".py":
        return True
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or "", *(a.name for a in node.names)]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        elif isinstance(node, ast.Name):
            names = [node.id]
        else:
            continue
        if any(LEGACY_MODULE in n.split(".") for n in names):
            return True
    return False
