"""Kafka Streams' security settings (Java client keys) as kspark's Kafka client (librdkafka)
takes them, and Kafka's texts for refused credentials and denied topics (issue 37 item 4; the
secured broker itself is tests/kafka/test_kafka_security.py)."""

import pytest
from confluent_kafka import KafkaError

from kspark import ConfigException
from kspark.topics._kafka import _authenticationException, _sslConfig, topicAuthorizationException


def test_pem_key_and_trust_stores_become_librdkafkas_locations():
    """Kafka's PEM stores (KIP-651): the key store file holds the key and its chain, which
    librdkafka reads from one file for both; ssl.key.password decrypts the key under its own
    name (librdkafkaConfig keeps it); an empty endpoint algorithm is Java's "no host name check"."""
    assert _sslConfig({"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": "/c/ca.pem",
                       "ssl.keystore.type": "PEM", "ssl.keystore.location": "/c/client.pem", "ssl.key.password": "k3y",
                       "ssl.endpoint.identification.algorithm": ""}) == {
        "ssl.ca.location": "/c/ca.pem", "ssl.key.location": "/c/client.pem", "ssl.certificate.location": "/c/client.pem",
        "ssl.endpoint.identification.algorithm": "none"}


def test_pem_strings_and_pkcs12_key_stores():
    assert _sslConfig({"ssl.truststore.certificates": "-----BEGIN CERTIFICATE-----...",
                       "ssl.keystore.key": "-----BEGIN ENCRYPTED PRIVATE KEY-----...",
                       "ssl.keystore.certificate.chain": "-----BEGIN CERTIFICATE-----..."}) == {
        "ssl.ca.pem": "-----BEGIN CERTIFICATE-----...", "ssl.key.pem": "-----BEGIN ENCRYPTED PRIVATE KEY-----...",
        "ssl.certificate.pem": "-----BEGIN CERTIFICATE-----..."}
    assert _sslConfig({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": "/certs/client.p12",
                       "ssl.keystore.password": "st0re"}) == {
        "ssl.keystore.location": "/certs/client.p12", "ssl.keystore.password": "st0re"}


def test_a_store_librdkafka_cannot_read_is_refused_naming_the_key():
    """Kafka's default store type, JKS, is Java's own format."""
    with pytest.raises(ConfigException, match=r"^Invalid value JKS for configuration ssl.truststore.type: kspark's "
                                              r"Kafka client \(librdkafka\) reads trust stores of type PEM only$"):
        _sslConfig({"ssl.truststore.location": "/certs/truststore.jks", "ssl.truststore.password": "changeit"})
    with pytest.raises(ConfigException, match=r"^Invalid value JKS for configuration ssl.keystore.type: "):
        _sslConfig({"ssl.keystore.type": "JKS", "ssl.keystore.location": "/certs/keystore.jks"})


def test_refused_credentials_and_denied_topics_have_kafkas_texts():
    refused = KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error: Authentication failed during "
                         "authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512 (after 3ms in "
                         "state AUTH_REQ)")
    assert str(_authenticationException(refused)) == (
        "org.apache.kafka.common.errors.SaslAuthenticationException: Authentication failed during authentication due "
        "to invalid credentials with SASL mechanism SCRAM-SHA-512")
    assert str(topicAuthorizationException(["signals", "alerts", "signals"])) == (
        "org.apache.kafka.common.errors.TopicAuthorizationException: Not authorized to access topics: [alerts, signals]")
