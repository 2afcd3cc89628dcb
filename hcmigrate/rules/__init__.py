"""The codemod's rules: one module per rule or concern, each rule a record with a code, a level,
its examples and the trigger that dispatches sites to its rewrite.

How to write one: docs/contributing.md. What a rule module uses: hcmigrate.rules.spec (records
and triggers), hcmigrate.rules.context (sites and what a rewrite may ask), hcmigrate.rules.nodes
(node builders). Importing this package is cheap: hcmigrate.rules.registry.registry() imports
the rule modules (and libcst) when first called.
"""
