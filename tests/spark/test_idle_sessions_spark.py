"""The idle-session example on Spark: punctuators close every session, including the tail
after the input stops, and the count equals a direct computation (rules P-2..P-5)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import idle_sessions  # noqa: E402


def test_every_session_is_closed_by_gap_stream_time_or_wall_clock(spark, tmp_path):
    df = idle_sessions.readRequests(3_000)
    sessions, expected, _ = idle_sessions.run(tmp_path, df, idleMs=2_000, trigger="500 milliseconds",
                                              timeoutS=150, spark=spark)
    assert expected == 299
    assert len(sessions) == expected
    closedBy = {s["closedBy"] for s in sessions}
    assert "wall-clock" in closedBy and "stream-time" in closedBy  # the tail needed the wall clock
    assert sum(s["requests"] for s in sessions) == len(df)
