"""FINDINGS F1, F5, F12 (texts): the rest of Kafka's built-in serdes (Short, Boolean, Bytes,
ByteBuffer, ListSerde), Java's decoding of invalid UTF-8, and Kafka's deserializer error texts.
Expected bytes and texts are what Kafka 4.3.1's serializers give (checked with its jars)."""

import struct
import uuid

import pytest

from kspark import Consumed, Serdes, StreamsBuilder, StreamsException
from kspark.serialization import SerializationException, javaUtf8Decode
from kspark.testing import TopologyTestDriver

RAW = (Serdes.ByteArray(), Serdes.ByteArray())


def passThrough(serde, pipes):
    """stream("in", Consumed.with(serde, serde)).to("out"): the sink inherits the source's serdes."""
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(serde, serde)).to("out")
    with TopologyTestDriver(b.build()) as d:
        topic = d.createInputTopic("in", *RAW)
        for key, value, ts in pipes:
            topic.pipeInput(key, value, ts)
        return [(r.key(), r.value(), r.timestamp()) for r in d.createOutputTopic("out", *RAW).readRecordsToList()]


def test_short_is_two_bytes_big_endian_and_inherited_by_the_sink():
    assert Serdes.Short().serialize("t", -2) == bytes.fromhex("fffe")
    assert Serdes.Short().deserialize("t", bytes.fromhex("7fff")) == 32767
    with pytest.raises(SerializationException, match="^Size of data received by ShortDeserializer is not 2$"):
        Serdes.Short().deserialize("t", b"\x00\x00\x00")
    assert passThrough(Serdes.Short(), [(b"\x00\x01", b"\xff\xfe", 5)]) == [(b"\x00\x01", b"\xff\xfe", 5)]


def test_boolean_is_one_byte_and_rejects_others_with_kafkas_texts():
    assert Serdes.Boolean().serialize("t", True) == b"\x01"
    assert Serdes.Boolean().serialize("t", False) == b"\x00"
    assert Serdes.Boolean().deserialize("t", b"\x01") is True
    with pytest.raises(SerializationException, match="^Size of data received by BooleanDeserializer is not 1$"):
        Serdes.Boolean().deserialize("t", b"\x00\x00\x00")
    with pytest.raises(SerializationException, match="^Unexpected byte received by BooleanDeserializer: 2$"):
        Serdes.Boolean().deserialize("t", b"\x02")
    with pytest.raises(SerializationException, match="^Unexpected byte received by BooleanDeserializer: -1$"):
        Serdes.Boolean().deserialize("t", b"\xff")
    with pytest.raises(SerializationException, match="cannot serialize a int"):
        Serdes.Boolean().serialize("t", 1)
    assert passThrough(Serdes.Boolean(), [(b"\x01", b"\x00", 3)]) == [(b"\x01", b"\x00", 3)]


def test_bytes_and_bytebuffer_are_the_raw_bytes():
    for serde in (Serdes.Bytes(), Serdes.ByteBuffer()):
        assert serde.serialize("t", memoryview(b"\x00ab")) == b"\x00ab"
        assert serde.deserialize("t", b"\x00ab") == b"\x00ab"
        assert passThrough(serde, [(b"", b"\xff\x00", 1)]) == [(b"", b"\xff\x00", 1)]
    assert Serdes.Bytes() != Serdes.ByteBuffer() != Serdes.ByteArray()


def test_list_serde_writes_kafkas_two_layouts():
    strings = Serdes.ListSerde(list, Serdes.String())  # variable size: length before each entry, -1 for null
    written = bytes.fromhex("01" "00000003" "00000002" "6162" "ffffffff" "00000001" "63")
    assert strings.serialize("t", ["ab", None, "c"]) == written
    assert strings.deserialize("t", written) == ["ab", None, "c"]
    ints = Serdes.ListSerde(list, Serdes.Integer())  # constant size: the null indexes first
    assert ints.serialize("t", [1, 2]) == bytes.fromhex("00" "00000000" "00000002" "00000001" "00000002")
    withNull = bytes.fromhex("00" "00000001" "00000001" "00000002" "00000001")
    assert ints.serialize("t", [1, None]) == withNull
    assert ints.deserialize("t", withNull) == [1, None]
    assert Serdes.ListSerde(tuple, Serdes.Integer()).deserialize("t", withNull) == (1, None)
    with pytest.raises(SerializationException, match="^Invalid serialization strategy flag value$"):
        ints.deserialize("t", b"\x02")
    with pytest.raises(SerializationException, match="^End of the stream was reached prematurely$"):
        strings.deserialize("t", bytes.fromhex("01" "00000001" "00000002"))
    with pytest.raises(ValueError, match="requires both"):
        Serdes.ListSerde(None, Serdes.String())


def test_invalid_utf8_decodes_as_java_does():
    # Java 17's new String(bytes, UTF_8): one U+FFFD per malformed sequence as Java delimits it
    assert Serdes.String().deserialize("t", b"\xffa\xc3") == "\ufffda\ufffd"
    assert javaUtf8Decode(b"\xed\xa0\x80") == "\ufffd"            # an encoded surrogate: one (Python: three)
    assert javaUtf8Decode(b"x\xed\xa0") == "x\ufffd"              # truncated at the end: one (Python: two)
    assert javaUtf8Decode(b"\xf0\x9f\x98") == "\ufffd"
    assert javaUtf8Decode(b"\xc0\x80") == "\ufffd\ufffd"          # overlong
    assert javaUtf8Decode(b"\xf4\x90\x80\x80") == "\ufffd" * 4    # beyond U+10FFFF
    assert javaUtf8Decode("é€😀".encode()) == "é€😀"
    # through a topology: Kafka's StringDeserializer never fails; the sink writes U+FFFD's bytes
    assert passThrough(Serdes.String(), [(b"k", b"\xff", 1)]) == [(b"k", b"\xef\xbf\xbd", 1)]


def test_string_serializer_writes_a_lone_surrogate_as_a_question_mark():
    assert Serdes.String().serialize("t", "a\ud800b") == b"a?b"
    assert Serdes.String().serialize("t", "\ud83d\ude00") == "😀".encode()  # a pair is one code point in Java


@pytest.mark.parametrize("serde, text", [
    (Serdes.Long(), "Size of data received by LongDeserializer is not 8"),
    (Serdes.Integer(), "Size of data received by IntegerDeserializer is not 4"),
    (Serdes.Double(), "Size of data received by Deserializer is not 8"),
    (Serdes.Float(), "Size of data received by Deserializer is not 4"),
])
def test_deserializer_size_errors_are_kafkas_texts(serde, text):
    with pytest.raises(SerializationException, match=f"^{text}$"):
        serde.deserialize("t", b"abc")


def test_void_deserializer_raises_kafkas_illegal_argument():
    with pytest.raises(ValueError, match=r"^Data should be null for a VoidDeserializer\.$"):
        Serdes.Void().deserialize("t", b"")


def test_a_bad_value_fails_the_task_with_kafkas_text_and_the_serdes_cause():
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(Serdes.String(), Serdes.Long())).to("out")
    with TopologyTestDriver(b.build()) as d:
        with pytest.raises(StreamsException) as failure:
            d.createInputTopic("in", *RAW).pipeInput(b"k", b"abc", 1)
    assert str(failure.value).startswith(
        "Deserialization exception handler is set to fail upon a deserialization error. If you would rather have "
        "the streaming pipeline continue after a deserialization error, please set the "
        "deserialization.exception.handler appropriately.")
    assert isinstance(failure.value.__cause__, SerializationException)
    assert str(failure.value.__cause__) == "Size of data received by LongDeserializer is not 8"


def test_uuid_fixed_size_in_a_list():
    u = uuid.UUID("123e4567-e89b-12d3-a456-426614174000")
    serde = Serdes.ListSerde(list, Serdes.UUID())
    assert serde.serialize("t", [u]) == b"\x00" + struct.pack(">ii", 0, 1) + str(u).encode()
    assert serde.deserialize("t", serde.serialize("t", [u, None])) == [u, None]
