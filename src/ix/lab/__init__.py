"""What the user wrote: the lab and its experiments (loading, schema, defaults, the subject
registry, YAML and frontmatter), and the safe-file helpers every writer uses."""
