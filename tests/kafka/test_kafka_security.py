"""kspark on a secured broker (issue 37 item 4), as Kafka shops run one: a SASL_PLAINTEXT
(SCRAM-SHA-512) listener and an SSL listener (client certificates from a throwaway CA made here
with the ``openssl`` command, which Debian's ca-certificates, and so every Java, brings), ACLs
checked by KRaft's ``StandardAuthorizer``. One broker for the module,
started from the jars ``make jvm`` resolves, as the session's ``kafkaBroker`` is.

The principals get the ACLs Kafka Streams' security guide documents for an application
(docs/streams/developer-guide/security.html, "Required ACL setting for secure Kafka clusters"):
READ on its input topics, WRITE on its output topics, ALL on the topics and groups prefixed with
its ``application.id`` (internal topics, the group; KIP-277, KIP-290), and WRITE and DESCRIBE on
the transactional ids prefixed with it (exactly_once_v2)."""

import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient, ResourcePatternType,
                                   ResourceType)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))

import valuation_signals as vs  # noqa: E402
from kspark import Consumed, KafkaStreams, Produced, Serdes, StreamsBuilder, StreamsException  # noqa: E402
from kspark.testing import KafkaBroker  # noqa: E402
from kspark.testing._jvm_server import freePort as _freePort  # noqa: E402
from kspark.topics import openTopics  # noqa: E402
from kspark.topics._kafka import KafkaSinkWriter  # noqa: E402

PRICE_ROWS = 6_000  # the flagship test's input (test_kafka_spark.py): its signals are the driver's
ADMIN_PASSWORD = "admin-secret-8dc2"
APP_PASSWORD = "app-secret-5f1e9a"  # the secrets a run must never print
KEY_PASSWORD = "key-secret-c07b41"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"{}\" password=\"{}\";"


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def makeCertificates(directory: Path) -> None:
    """A throwaway CA (ca.pem), the broker's key and certificate for 127.0.0.1 (broker.pem, as
    Kafka's PEM key store reads it: key then chain) and a client's (client.pem, CN=ssl-app, key
    encrypted with KEY_PASSWORD)."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=kspark-test-ca", cwd=directory)
    for name, subject, ext in (("broker", "/CN=localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost"),
                               ("client", "/CN=ssl-app", "extendedKeyUsage=clientAuth")):
        (directory / f"{name}.ext").write_text(ext + "\n")
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject,
                 cwd=directory)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
                 "-extfile", f"{name}.ext", "-out", f"{name}.crt", cwd=directory)
    _openssl("pkcs8", "-topk8", "-v2", "aes-256-cbc", "-in", "client.key", "-out", "client-encrypted.key",
             "-passout", f"pass:{KEY_PASSWORD}", cwd=directory)
    (directory / "broker.pem").write_text((directory / "broker.key").read_text() + (directory / "broker.crt").read_text())
    (directory / "client.pem").write_text((directory / "client-encrypted.key").read_text()
                                          + (directory / "client.crt").read_text())


class SecuredBroker:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self._admin = None
        self.saslPort, self.sslPort = _freePort(), _freePort()
        listeners = f"SASL_PLAINTEXT://127.0.0.1:{self.saslPort},SSL://127.0.0.1:{self.sslPort}"
        self.broker = KafkaBroker(directory / "kafka", port=self.saslPort, config={
            "listeners": listeners, "advertised.listeners": listeners,
            "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL",
            "inter.broker.listener.name": "SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
            "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM.format("admin", ADMIN_PASSWORD),
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            # ANONYMOUS: the controller listener (PLAINTEXT, this broker only); every client listener authenticates
            "super.users": "User:admin;User:ANONYMOUS",
            "ssl.keystore.type": "PEM", "ssl.keystore.location": str(directory / "broker.pem"),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(directory / "ca.pem"),
            "ssl.client.auth": "required",
            "ssl.principal.mapping.rules": "RULE:^CN=(.*?)$/$1/,DEFAULT",  # CN=ssl-app -> User:ssl-app
        }, clientConfig=self.sasl("admin", ADMIN_PASSWORD, librdkafka=True), scramCredentials={"admin": ADMIN_PASSWORD})

    def sasl(self, user, password, librdkafka=False):
        if librdkafka:
            return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": user,
                    "sasl.password": password}
        return {"bootstrap.servers": f"127.0.0.1:{self.saslPort}", "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": SCRAM.format(user, password)}

    def ssl(self):
        """Kafka Streams' SSL settings (Java keys, PEM stores) for the principal ssl-app."""
        return {"bootstrap.servers": f"127.0.0.1:{self.sslPort}", "security.protocol": "SSL",
                "ssl.truststore.type": "PEM", "ssl.truststore.location": str(self.dir / "ca.pem"),
                "ssl.keystore.type": "PEM", "ssl.keystore.location": str(self.dir / "client.pem"),
                "ssl.key.password": KEY_PASSWORD}

    def admin(self):
        if self._admin is None:  # kept: a client collected while its futures are pending fails them
            self._admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{self.saslPort}",
                                       **self.sasl("admin", ADMIN_PASSWORD, True)})
        return self._admin

    def addUser(self, user, password):
        from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

        upsert = UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                                              password.encode())
        for future in self.admin().alter_user_scram_credentials([upsert]).values():
            future.result(30)

    def allow(self, principal, applicationId, inputs, outputs):
        """Kafka Streams' documented ACLs for an application (see the module doc)."""
        user = f"User:{principal}"

        def acl(kind, name, pattern, operation):
            return AclBinding(kind, name, pattern, user, "*", operation, AclPermissionType.ALLOW)

        bindings = [acl(ResourceType.TOPIC, t, ResourcePatternType.LITERAL, AclOperation.READ) for t in inputs]
        bindings += [acl(ResourceType.TOPIC, t, ResourcePatternType.LITERAL, AclOperation.WRITE) for t in outputs]
        bindings += [acl(ResourceType.TOPIC, applicationId, ResourcePatternType.PREFIXED, AclOperation.ALL),
                     acl(ResourceType.GROUP, applicationId, ResourcePatternType.PREFIXED, AclOperation.ALL),
                     acl(ResourceType.TRANSACTIONAL_ID, applicationId, ResourcePatternType.PREFIXED, AclOperation.WRITE),
                     acl(ResourceType.TRANSACTIONAL_ID, applicationId, ResourcePatternType.PREFIXED, AclOperation.DESCRIBE)]
        for future in self.admin().create_acls(bindings).values():
            future.result(30)


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    directory = tmp_path_factory.mktemp("secured-kafka")
    makeCertificates(directory)
    secured = SecuredBroker(directory)
    secured.broker.start()
    try:
        secured.addUser("app", APP_PASSWORD)
        secured.addUser("nowrite", APP_PASSWORD)
        yield secured
    finally:
        secured._admin = None  # its client goes before the broker: no reconnect lines at exit
        secured.broker.close()


@pytest.fixture(scope="module")
def flagshipInput(secured):
    """The flagship's topics, loaded as the admin, and TopologyTestDriver's signals for them."""
    prices = vs.readPrices(PRICE_ROWS)
    valuations = [v for v in vs.readValuations() if v["date"] <= prices[-1]["trade_date"]]
    vs.loadTopics(openTopics(secured.sasl("admin", ADMIN_PASSWORD)), prices, valuations)
    return vs.driverSignals(prices, valuations)


def props(appId, tmp_path, client, **more):
    return {"application.id": appId, "state.dir": str(tmp_path / "state"), "processing.guarantee": "exactly_once_v2",
            **client, **more}


def test_flagship_job_as_a_principal_with_kafka_streams_acls_gives_the_drivers_signals(secured, flagshipInput, tmp_path):
    """SASL_PLAINTEXT, SCRAM-SHA-512, exactly_once_v2, only the ACLs Kafka Streams documents: the
    same signals as the unsecured run (TopologyTestDriver's, rules J-1..J-8). Run by ``kspark run
    -v`` (Spark's INFO logs and every line of the JVM, whose Python workers' output it carries),
    with the progress view and the summary, and ``--describe``: the password appears nowhere in
    what they printed."""
    secured.allow("app", "secured-flagship", ["prices", "valuations", "companies"], ["signals"])
    config = tmp_path / "app.properties"
    settings = props("secured-flagship", tmp_path, secured.sasl("app", APP_PASSWORD),
                     **{"kspark.max.records.per.trigger": 2_000, "kspark.spark.master": "local[2]"})
    config.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    kspark = Path(sys.executable).with_name("kspark")
    run = subprocess.run([str(kspark), "run", f"{EXAMPLES / 'valuation_signals.py'}:buildTopology", "--config", str(config),
                          "--progress", "plain", "-v"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    got = vs.readSignals(openTopics(secured.sasl("admin", ADMIN_PASSWORD)))
    assert len(flagshipInput) > 50
    assert got == flagshipInput
    described = subprocess.run([str(kspark), "run", f"{EXAMPLES / 'valuation_signals.py'}:buildTopology", "--config",
                                str(config), "--describe"], capture_output=True, text=True, timeout=120)
    assert described.stdout.startswith("Topologies:")
    output = run.stdout + run.stderr + described.stdout + described.stderr
    assert "secured-flagship sub-topology 1 batch 0:" in run.stdout and "== secured-flagship: summary ==" in run.stdout
    assert " INFO " in run.stderr  # verbose: Spark's logs are in it
    assert APP_PASSWORD not in output


def test_a_principal_without_write_access_to_the_output_fails_with_topic_authorization_exception(
        spark, secured, flagshipInput, tmp_path):
    """Every ACL but WRITE on 'signals': the run fails before its first batch with Kafka's
    TopicAuthorizationException text naming the topic (the topics' authorized operations,
    KIP-430), and writes nothing (no internal topic, no committed offset)."""
    secured.allow("nowrite", "secured-nowrite", ["prices", "valuations", "companies"], [])
    admin = openTopics(secured.sasl("admin", ADMIN_PASSWORD))
    before = admin.endOffsets("signals")  # the first test's signals, if it ran
    streams = KafkaStreams(vs.buildTopology(), props("secured-nowrite", tmp_path, secured.sasl("nowrite", APP_PASSWORD)),
                           spark=spark)
    with pytest.raises(StreamsException, match=r"^org.apache.kafka.common.errors.TopicAuthorizationException: "
                                               r"Not authorized to access topics: \[signals\]$"):
        streams.start()  # before Spark runs a batch
    # and a batch's writer, had the ACL gone after the start: the same text at once, not three
    # transactions retried (KafkaSinkWriter maps librdkafka's TOPIC_AUTHORIZATION_FAILED)
    client = openTopics(secured.sasl("nowrite", APP_PASSWORD))
    writer = KafkaSinkWriter(client.producerConfig, client.consumerConfig, "secured-nowrite", True,
                             "secured-nowrite-subtopology-1")
    record = pa.table({"timestamp": [1_000], "key": [b"k"], "value": [b"v"], "headers": [None]})
    with pytest.raises(StreamsException, match=r"^Writing to Kafka with secured-nowrite-subtopology-1-0 failed: "
                                               r"org.apache.kafka.common.errors.TopicAuthorizationException: "
                                               r"Not authorized to access topics: \[signals\]$"):
        writer.write(0, "ckpt", 0, [("signals", 0, record)], {})
    assert admin.endOffsets("signals") == before
    assert not [t for t in admin.listTopics() if t.startswith("secured-nowrite")]  # not even its internal topics
    assert admin.committedOffsets("secured-nowrite", "prices") == {}


def test_a_wrong_password_fails_with_the_authentication_error_within_the_admin_timeout(spark, secured, tmp_path):
    """SCRAM with a wrong password: Kafka's SaslAuthenticationException text, within the admin
    client's default.api.timeout.ms, and the wrong password is not printed."""
    wrong = "not-the-password-93b"
    started = time.monotonic()
    with pytest.raises(StreamsException, match=r"Authentication failed during authentication due to invalid "
                                               r"credentials with SASL mechanism SCRAM-SHA-512") as failure:
        KafkaStreams(vs.buildTopology(), props("secured-wrong", tmp_path, secured.sasl("app", wrong),
                                               **{"admin.default.api.timeout.ms": 10_000}), spark=spark).start()
    assert time.monotonic() - started < 10
    assert wrong not in str(failure.value)


def test_a_topology_over_the_ssl_listener_with_a_client_certificate(spark, secured, tmp_path, capfd):
    """SSL with a client certificate (encrypted key, Java's PEM key store keys): principal
    ssl-app from the certificate's CN, Kafka Streams' ACLs, every record upper-cased once; the
    key's password is not printed."""
    admin = openTopics(secured.sasl("admin", ADMIN_PASSWORD))
    admin.createTopic("ssl-in", 2)
    admin.createTopic("ssl-out", 2)
    strings = Serdes.String()
    admin.produce("ssl-in", [(strings.serialize("t", f"k{i}"), strings.serialize("t", f"v{i}"), 1_000 + i)
                             for i in range(30)], partitioner=lambda key, n: int(key[1:]) % n)
    secured.allow("ssl-app", "secured-ssl", ["ssl-in"], ["ssl-out"])
    b = StreamsBuilder()
    (b.stream("ssl-in", Consumed.with_(Serdes.String(), Serdes.String())).mapValues(str.upper)
     .to("ssl-out", Produced.with_(Serdes.String(), Serdes.String())))
    streams = KafkaStreams(b.build(), props("secured-ssl", tmp_path, secured.ssl()), spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()
    out = sorted((r["key"].decode(), r["value"].decode()) for p, end in admin.endOffsets("ssl-out").items()
                 for r in admin.read("ssl-out", p, 0, end).to_pylist())
    assert out == sorted((f"k{i}", f"V{i}") for i in range(30))
    out, err = capfd.readouterr()
    assert KEY_PASSWORD not in out + err


FAILING_APP = """
from kspark import Consumed, Produced, Serdes, StreamsBuilder


def fail(value):
    if value == "v7":
        raise ValueError("no v7 here")
    return value.upper()


def buildTopology():
    b = StreamsBuilder()
    (b.stream("fail-in", Consumed.with_(Serdes.String(), Serdes.String())).mapValues(fail)
     .to("fail-out", Produced.with_(Serdes.String(), Serdes.String())))
    return b.build()
"""


def test_a_run_that_fails_on_the_executors_prints_no_secret(secured, tmp_path):
    """A processor raising on an executor: kspark's failure report and, with -v, Spark's (its
    query exception, logical plan and task failures, which carry the data source's options)
    never show the password; the run fails with the processor's error."""
    admin = openTopics(secured.sasl("admin", ADMIN_PASSWORD))
    admin.createTopic("fail-in", 1)
    admin.createTopic("fail-out", 1)
    strings = Serdes.String()
    admin.produce("fail-in", [(strings.serialize("t", f"k{i}"), strings.serialize("t", f"v{i}"), 1_000 + i)
                              for i in range(10)], partitioner=lambda key, n: 0)
    secured.allow("app", "secured-fail", ["fail-in"], ["fail-out"])
    (tmp_path / "failapp.py").write_text(FAILING_APP)
    config = tmp_path / "app.properties"
    settings = props("secured-fail", tmp_path, secured.sasl("app", APP_PASSWORD), **{"kspark.spark.master": "local[1]"})
    config.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    kspark = Path(sys.executable).with_name("kspark")
    run = subprocess.run([str(kspark), "run", f"{tmp_path / 'failapp.py'}:buildTopology", "--config", str(config), "-v"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 1
    assert "ValueError: no v7 here" in run.stderr
    assert APP_PASSWORD not in run.stdout + run.stderr
