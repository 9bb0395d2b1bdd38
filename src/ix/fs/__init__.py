"""The disk's floor: where a lab is, safe paths (inside the lab, never through a symlink),
whole-file writes and appends, YAML and frontmatter reading, names that are safe as file
names, and the storage faults (a full disk, a read-only folder) in words. It knows nothing of
experiments or runs: `lab` (what the user wrote) and `store` (what runs wrote) both stand on it.
"""
