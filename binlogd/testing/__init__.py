"""binlogd as a test harness: build binlogs from Python, serve them, inject faults, run real MariaDB peers."""
