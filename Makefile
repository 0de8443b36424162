# Two set-up commands for a fresh Debian 12 machine: `make run` and `make test`.
PY      ?= python3
VENV    ?= .venv
BIN      = $(VENV)/bin
PORT    ?= 3307
SERVER_ID ?= 1
BINLOG_DIR ?= $(CURDIR)/var/demo-binlogs
DATADIR ?= $(CURDIR)/var

.PHONY: run run-demo test deps mariadb java chromium lint bench clean

# Debian's python3 needs python3-venv for `python3 -m venv` (root on Debian 12, as in CI).
$(BIN)/python:
	@$(PY) -m venv $(VENV) 2>/dev/null || { \
	  echo "installing python3-venv"; rm -rf $(VENV); \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq python3-venv && \
	  $(PY) -m venv $(VENV); }

$(VENV)/.deps: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $@

deps: $(VENV)/.deps

# apt-get install only when the MariaDB binaries are missing (root on Debian 12, as in CI).
mariadb:
	@command -v mariadbd >/dev/null && command -v mariadb-binlog >/dev/null || { \
	  echo "installing mariadb-server mariadb-client"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq mariadb-server mariadb-client; }

# The main job: a standalone primary on $(DATADIR). Clients write SQL, binlogd logs every change in statement
# format, replicas apply it (docs/standalone.md). `make run-demo` serves a demo binlog directory read-only instead.
run: deps
	@echo "binlogd: standalone primary on 127.0.0.1:$(PORT) (server_id $(SERVER_ID)), binlog in $(DATADIR)."
	@echo "  write:    mariadb -h127.0.0.1 -P$(PORT) -uroot -e \"CREATE DATABASE shop; CREATE TABLE shop.t (id INT PRIMARY KEY, v VARCHAR(20)); INSERT INTO shop.t VALUES (1,'hello')\""
	@echo "  look:     mariadb -h127.0.0.1 -P$(PORT) -uroot -e 'SHOW BINARY LOGS; SHOW BINLOG EVENTS'"
	@echo "  replica:  on a MariaDB 10.11 replica (another server_id): CHANGE MASTER TO MASTER_HOST='127.0.0.1',"
	@echo "            MASTER_PORT=$(PORT), MASTER_USER='root', MASTER_PASSWORD='', MASTER_USE_GTID=slave_pos; START SLAVE;"
	@echo "  (SET skip_replication=1 in a writing session flags its events; a replica with"
	@echo "   replicate_events_marked_for_skip=FILTER_ON_MASTER does not get them.)"
	$(BIN)/binlogd serve --datadir $(DATADIR) --port $(PORT) --server-id $(SERVER_ID)

run-demo: deps
	@[ -e $(BINLOG_DIR)/mysql-bin.index ] || $(BIN)/binlogd demo-dir $(BINLOG_DIR)
	@echo "binlogd on 127.0.0.1:$(PORT) (server_id $(SERVER_ID)), serving $(BINLOG_DIR) read-only. Try:"
	@echo "  mariadb -h127.0.0.1 -P$(PORT) -uroot -e 'SHOW BINARY LOGS; SHOW BINLOG EVENTS'"
	@echo "  mariadb-binlog --read-from-remote-server -h127.0.0.1 -P$(PORT) -uroot --to-last-log mysql-bin.000001"
	$(BIN)/binlogd serve --binlog-dir $(BINLOG_DIR) --port $(PORT) --server-id $(SERVER_ID)

# Java for the Spark audit (spark_analytics/, tests/test_audit.py): apt-get only when `java` is missing.
java:
	@command -v java >/dev/null || { \
	  echo "installing openjdk-17-jre-headless"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq openjdk-17-jre-headless; }

# Headless Chromium for looking at the audit's HTML report (tests/chromium.py): apt-get only when it is missing.
chromium:
	@[ -x /usr/bin/chromium ] || { \
	  echo "installing chromium"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }

# Two pytest-xdist workers by default (most tests wait on MariaDB servers); a test file stays on one worker, so its
# module-scoped servers and Spark session start once. PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= 2
# The `mariadb` connector (tests/test_prepared_binlog.py) builds a C extension: libmariadb-dev, gcc, python3-dev.
$(VENV)/.connector: pyproject.toml | $(VENV)/.deps
	@command -v mariadb_config >/dev/null && command -v gcc >/dev/null && \
	  $(BIN)/python -c "import sysconfig, os, sys; sys.exit(not os.path.exists(sysconfig.get_paths()['include'] + '/Python.h'))" || { \
	  echo "installing libmariadb-dev gcc python3-dev (the mariadb connector's build)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq libmariadb-dev gcc python3-dev; }
	$(BIN)/pip install -q -e '.[test,connector]'
	touch $@

test: deps $(VENV)/.connector mariadb java chromium
	$(BIN)/ruff check binlogd protocol server applier spark_analytics show tests benchmarks examples
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --dist loadfile --durations=15 $(PYTEST_ARGS)

lint: deps
	$(BIN)/ruff check binlogd protocol server applier spark_analytics show tests benchmarks examples

bench: deps mariadb
	$(BIN)/python -m benchmarks.dump_throughput

clean:
	rm -rf $(VENV) var .pytest_cache
