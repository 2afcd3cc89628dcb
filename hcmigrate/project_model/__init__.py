"""The project model: one layer that knows the whole run (which module binds which legacy name
and how, who imports it, under which transformations each function runs). The engine reads it
through each module's view (hcmigrate.options.Options: `reexports`, `runs_under`); see
docs/contributing.md.

bindings.py      the lenient module-level reading the pre-filter follows re-exports with
module_facts.py  one module's code, from Python's ast
model.py         the model: names resolved across modules, links to keep, transformations
x64_mode.py      is 64-bit mode on whenever a module runs (its own switch, a package __init__'s)
build.py         the model of a run, and each module's view of it
"""
