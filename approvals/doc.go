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
//	└── settings/
//	    └── <extension> → settingsRecord JSON:
//	                      {"revision":N,"updatedAt":"…","settings":{…canonical…}}
//
// Every write is one bbolt Update, which is on disk (fdatasync) when it
// returns; Batch is never used. Values are copied out before their
// transaction ends.
//
// Migrations, applied in order at Open and recorded in meta/schema:
//
//  1. initial layout: meta/ and settings/.
package approvals
