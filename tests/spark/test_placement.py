"""Task keys land on their own Spark shuffle partition (spark-hosting-findings G3b)."""

from kspark.spark._placement import balancedTaskKeys, sparkHashInt


def test_spark_hash_int_matches_sparks_hash(spark):
    rows = spark.range(-50, 200).selectExpr("cast(id as int) as i", "hash(cast(id as int)) as h").collect()
    assert [(r.i, sparkHashInt(r.i)) for r in rows] == [(r.i, r.h) for r in rows]


def test_balanced_keys_give_each_task_its_own_partition():
    keys = balancedTaskKeys(5, 5)
    assert sorted(sparkHashInt(k) % 5 for k in keys) == [0, 1, 2, 3, 4]
    assert [sparkHashInt(k) % 2 for k in balancedTaskKeys(4, 2)] == [0, 1, 0, 1]
    assert len(set(balancedTaskKeys(8, 2))) == 8
