"""The replica-side applier (channels, replication filters, skip modes). Not implemented yet: see issue 6."""
