# Two set-up commands for a fresh Debian 12 machine: `make run` and `make test`.
PY      ?= python3
VENV    ?= .venv
BIN      = $(VENV)/bin
PORT    ?= 3307
SERVER_ID ?= 1
BINLOG_DIR ?= $(CURDIR)/var/demo-binlogs

.PHONY: run test deps mariadb lint bench clean

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

# The main job. Until the standalone writer exists (issue 3) this serves a demo binlog directory
# (a copy of the MariaDB 10.11 oracle binlogs, or the files you put in $(BINLOG_DIR)).
run: deps
	@[ -e $(BINLOG_DIR)/mysql-bin.index ] || $(BIN)/binlogd demo-dir $(BINLOG_DIR)
	@echo "binlogd on 127.0.0.1:$(PORT) (server_id $(SERVER_ID)), serving $(BINLOG_DIR). Try:"
	@echo "  mariadb -h127.0.0.1 -P$(PORT) -uroot -e 'SHOW BINARY LOGS; SHOW BINLOG EVENTS'"
	@echo "  mariadb-binlog --read-from-remote-server -h127.0.0.1 -P$(PORT) -uroot --to-last-log mysql-bin.000001"
	@echo "  on a MariaDB replica: CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$(PORT), MASTER_USER='root',"
	@echo "    MASTER_PASSWORD='', MASTER_USE_GTID=slave_pos; START SLAVE;"
	$(BIN)/binlogd serve --binlog-dir $(BINLOG_DIR) --port $(PORT) --server-id $(SERVER_ID)

test: deps mariadb
	$(BIN)/ruff check protocol server applier spark_analytics tests benchmarks
	$(BIN)/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

lint: deps
	$(BIN)/ruff check protocol server applier spark_analytics tests benchmarks

bench: deps mariadb
	$(BIN)/python -m benchmarks.dump_throughput

clean:
	rm -rf $(VENV) var .pytest_cache
