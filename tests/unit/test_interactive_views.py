"""Interactive-query views on the Spark host hold resources: RocksDB secondary instances over the
tasks' stores and temporary directories (the secondaries' own, and stores restored for the
view). Kafka's ReadOnly*Store has no close(), so a view handed out by KafkaStreams.store() or
checkpointedStore() releases them when it is garbage collected (or at exit), and at once on
close()."""

import gc
import json
import tempfile

import rocksdict

from kspark.spark._interactive import _TaskKeyValueView
from kspark.state import Stores


def taskStore(path):
    db = rocksdict.Rdict(str(path), rocksdict.Options(raw_mode=True))
    db[b"\x00meta"] = json.dumps({"checkpoint": "other"}).encode()
    db.close()
    return str(path)


def views(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    restored = tmp_path / "tmp" / "kspark-restored-x"
    restored.mkdir()
    view = _TaskKeyValueView("counts", [taskStore(tmp_path / "0_0")],
                             lambda: Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("counts")).build(),
                             "current", 0)
    view._dirs.append(str(restored))
    return view


def test_a_dropped_view_releases_its_databases_and_directories(tmp_path, monkeypatch):
    view = views(tmp_path, monkeypatch)
    assert sorted(p.name.split("-")[1] for p in (tmp_path / "tmp").iterdir()) == ["iq", "restored"]
    del view
    gc.collect()
    assert list((tmp_path / "tmp").iterdir()) == []


def test_close_releases_them_at_once_and_twice_is_harmless(tmp_path, monkeypatch):
    view = views(tmp_path, monkeypatch)
    view.close()
    assert list((tmp_path / "tmp").iterdir()) == []
    view.close()
