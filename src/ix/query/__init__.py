"""The query index of a lab's trial logs (Parquet) and the DuckDB views over it (`ix query`,
`ix results`, aggregates), with the wall that keeps user SQL read-only."""
