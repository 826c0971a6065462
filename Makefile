# make demo: install into .venv and run the valuation-signal job on Spark local mode
# make demo-kafka: the same job on a real Kafka broker (KRaft, started on 127.0.0.1), exactly once
# make demo-kafka-avro: the same on Avro topics, with a schema registry (Apicurio) started on 127.0.0.1
# make test: install into .venv and run the test suite
# make bench: also install the comparison systems (.[bench]) and run every benchmark (bench/README.md)
# make cluster: start a Spark standalone cluster on 127.0.0.1 (a master, two 1-core workers) and
#               print its master URL; make cluster-stop stops it (files in $(CLUSTER_DIR))
# make jvm: resolve the JVM artifacts of jvm/pom.xml (Kafka broker, kafka-streams) with Maven into
#           $(KSPARK_JVM_LIB), and build the schema registry of jvm/registry/pom.xml (Apicurio) in
#           $(KSPARK_REGISTRY_DIR), outside git; each again only when its pom changes
VENV ?= .venv
KSPARK_JVM_LIB ?= $(HOME)/.cache/kspark/jvm
KSPARK_REGISTRY_DIR ?= $(HOME)/.cache/kspark/registry
export KSPARK_JVM_LIB KSPARK_REGISTRY_DIR
PY := $(VENV)/bin/python
CLUSTER_DIR ?= work/spark-cluster
SPARK_CLUSTER := $(PY) -c 'import sys; from kspark.testing._spark_cluster import main; sys.exit(main())'
STAMP := $(VENV)/.installed

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	-$(PY) -m kspark.spark._cds > /dev/null
	touch $(STAMP)

.PHONY: demo demo-kafka demo-kafka-avro test bench jvm cluster cluster-stop
jvm:
	@cmp -s jvm/pom.xml $(KSPARK_JVM_LIB)/pom.xml || { \
	  rm -rf $(KSPARK_JVM_LIB).tmp && \
	  mvn -q -B -f jvm/pom.xml dependency:copy-dependencies -DoutputDirectory=$(KSPARK_JVM_LIB).tmp && \
	  cp jvm/pom.xml $(KSPARK_JVM_LIB).tmp/pom.xml && rm -rf $(KSPARK_JVM_LIB) && \
	  mv $(KSPARK_JVM_LIB).tmp $(KSPARK_JVM_LIB) && echo "JVM artifacts in $(KSPARK_JVM_LIB)"; }
	@cmp -s jvm/registry/pom.xml $(KSPARK_REGISTRY_DIR)/pom.xml || { \
	  rm -rf $(KSPARK_REGISTRY_DIR).tmp && mkdir -p $(KSPARK_REGISTRY_DIR).tmp && \
	  cp jvm/registry/pom.xml $(KSPARK_REGISTRY_DIR).tmp/pom.xml && \
	  mvn -q -B -f $(KSPARK_REGISTRY_DIR).tmp/pom.xml package && rm -rf $(KSPARK_REGISTRY_DIR) && \
	  mv $(KSPARK_REGISTRY_DIR).tmp $(KSPARK_REGISTRY_DIR) && echo "Schema registry in $(KSPARK_REGISTRY_DIR)"; }

demo: $(STAMP)
	$(PY) examples/valuation_signals.py

demo-kafka: $(STAMP) jvm
	$(PY) examples/valuation_signals.py --kafka

demo-kafka-avro: $(STAMP) jvm
	$(PY) examples/valuation_signals.py --kafka --avro

test: $(STAMP) jvm
	$(PY) -m pytest -q --durations=25

bench: $(STAMP) jvm
	$(PY) -m pip install -q -e ".[bench]"
	$(PY) bench/run.py

cluster: $(STAMP)
	$(SPARK_CLUSTER) start $(CLUSTER_DIR)

cluster-stop: $(STAMP)
	$(SPARK_CLUSTER) stop $(CLUSTER_DIR)
