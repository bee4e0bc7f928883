"""Scenario files as pydantic models: the document's shape, its values and its names, and the run built from it.

`document.ScenarioDoc` is the file as written (after `extends:` and
`count:` expansion), `schema.scenario_schema()` its JSON Schema for editors;
`build.validate()` checks a document and `build.assemble()` resolves one run
of it (`p4handoff.scenario.model.Scenario`). `p4handoff.scenario.loader`
reads files and resolves all their runs.
"""
