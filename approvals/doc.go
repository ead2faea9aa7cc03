// Package approvals owns pikod's database: one bbolt file per instance that
// holds the settings, and (as the product grows) prepared actions,
// decisions, tombstones, receipts and retained sources.
//
// It may import contracts, go.etcd.io/bbolt and zerolog; never daemon,
// rpc, mcpclient or vault.
//
// Layout of pikod.db (bucket names end in /):
//
//	pikod.db
//	├── meta/
//	│   ├── schema   → decimal schema version ("1")
//	│   └── created  → RFC 3339 time the file was initialised
//	├── settings/
//	│   └── <extension> → SettingsRecord JSON:
//	│                     {"revision":N,"updatedAt":"…","settings":{…canonical…}}
//	└── processes/
//	    └── <pid, uint64 big-endian> → the supervisor's record of a process
//	                                   group or escaped descendant it started
//	                                   (server, pgid, start time), deleted
//	                                   once the process is gone
//
// Every write is one bbolt Update, which is on disk (fdatasync) when it
// returns; Batch is never used. Values are copied out before their
// transaction ends.
//
// Migrations, applied in order at Open and recorded in meta/schema:
//
//  1. initial layout: meta/ and settings/.
//  2. processes/: durable process records, so a restarted daemon reaps
//     the groups a killed one left.
package approvals
