"""pykraft.pipeline: batch jobs on Spark (PySpark) over metadata logs and simulations.

Theory of operation: every job is a thin Spark shell around pure functions. Spark lists
files, ships one file (or one range of seeds) per task, and writes Parquet; what a row means
is decided by plain Python that tests call directly on bytes built in memory:

* ``decode``: one segment or snapshot file -> every table's rows, column by column
  (``pykraft.records`` does all the parsing: one reader for everything).
* ``columnar``: those columns as Arrow record batches, shipped to the JVM with
  ``mapInArrow`` (no decoded row crosses one by one); ``totals``: per-node sums for
  ``committed``.
* ``committed``: which prefix of each node's log is committed (HWM given, else estimated).
* ``ingest``: log directories of several nodes -> ``batches``, ``records``,
  ``leader_changes``, ``voter_sets``, ``snapshots``, ``files``, ``committed`` tables.
* ``audit``: ingested tables -> divergences of the committed prefixes (DataFrame transforms).
* ``sweep``: seeds x fault profiles -> one simulator run per seed inside Spark tasks ->
  ``runs`` and per-profile ``profiles`` tables.
* ``report``: sweep and ingest tables -> markdown with PNG plots.

The CLI is ``pykraft pipeline <job>`` (``pykraft.cli.pipeline``); every job takes
``--master`` (default ``local[*]``) and ``--conf key=value``. Importing this package does not
import pyspark; the job modules do.
"""
