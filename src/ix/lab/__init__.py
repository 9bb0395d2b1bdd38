"""What the user wrote: the lab and its experiments (loading, schema, defaults, variants,
sweeps, the subject registry, the user's config and secrets). The disk helpers it reads them
with are in `ix.fs`."""
