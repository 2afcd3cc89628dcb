"""The project layer: what hcmigrate knows about the projects a run touches (issue 34).

Every project-level decision reads it, never the working folder or the `--config` file's folder:

    ownership.py        which project owns a file: the nearest folder with packaging metadata
                        above the file (pyproject.toml with a build or project table, setup.py,
                        setup.cfg with [metadata]/[options]; requirements files only where no
                        packaging metadata is found), never beyond a VCS root (ProjectIndex)
    roles.py            a file's role in its project: distribution code (the packages it ships),
                        tests, or docs (docs, examples, notebooks, scripts: they do not ship)
    metadata_files.py   the project's metadata files, read once, with what cannot be edited
                        (a symlink out of the project, an immutable file, not UTF-8) and the
                        requirement forms the run does not read
    constraints.py      what caps the project's jax: `-c` files, uv/pdm constraint settings
    floors.py           a declared `jax` floor (and jaxlib, Python) raised to a given release
    compat_dependency.py  `hcmigrate-compat` declared where the project lists its dependencies
    pins.py             pins that keep current JAX out (named, never edited)
    import_style.py     the project's isort/ruff import settings
    metadata_plan.py    the run's metadata edits, planned per project from the code as it is
                        after the run: the same plan feeds the write, --diff, --check and
                        --interactive

This package imports nothing heavy at import time: `hcmigrate.options` reads its import style.
"""
