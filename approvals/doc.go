// Package approvals owns pikod's database: one bbolt file per instance that
// holds the settings, prepared actions and their decisions, receipts (with
// their retention checkpoints), retained sources, pins, tasks and process
// records; the tombstone file beside it; and compaction of the file.
//
// It may import contracts, go.etcd.io/bbolt and zerolog; never daemon,
// rpc, mcpclient or vault.
//
// Files, by concern:
//
//	db.go, handle.go      the file: open (with its lock and timeout), check, migrate,
//	                      close, meta keys; the handle that views and updates
//	settings.go           the saved settings of each extension, with their revision
//	schema.go             the buckets and the ordered migrations (drawn below)
//	group.go              the group committer: call writes share one commit and fsync
//	action.go             an action: its record, its digest, the ids, the TTL and
//	                      the reasons recovery gives
//	ledger.go             the ledger: open and recover, prepare, begin, get, list, close
//	decisions.go          decisions on an action: approve, reject, revalidate, the
//	                      refusals, and the transitions to dispatched and the end states
//	tombstones.go         the tombstone file of decided ids beside the database
//	held.go, settle.go    outcomes held when the database is full; settling them
//	bootclock*.go         the boot clock that the TTL is also measured on
//	receipts.go           receipts and their hash chain: written, read, listed;
//	                      receipts_verify.go the walk that finds a break;
//	                      receipts_async.go the background writer of read
//	                      receipts; retention.go their pruning and checkpoints
//	sources.go            retained results (files with metadata); sources_retention.go
//	                      their cap and eviction
//	pins.go, skillpins.go pinned tool definitions and skills
//	tasks.go              tasks; processes.go the process records
//	compact.go            compaction of the file
//
// Layout of pikod.db (bucket names end in /):
//
//	pikod.db
//	├── meta/
//	│   ├── schema        → decimal schema version (migrations applied)
//	│   ├── created       → RFC 3339 time the file was initialised
//	│   ├── receipts_head → the receipt chain's head, JSON
//	│   │                   {"seq":N,"id":"rcpt_…","hash":"…"}: the
//	│   │                   newest receipt and the SHA-256 of its stored
//	│   │                   bytes; absent before the first receipt
//	│   ├── receipts_stats → the receipts kept, JSON {"count":N,"bytes":N}
//	│   │                   (their stored records' bytes), kept with every
//	│   │                   write and prune
//	│   ├── vault_backend → the vault backend the first start opened (or
//	│   │                   'pikoctl vault migrate' moved to), kept so
//	│   │                   later starts with "auto" use the same one
//	│   ├── vault_choice  → how vault_backend was chosen (daemon/vaultpin.go),
//	│   │                   JSON {"by":"auto"|"flag"|"migrate","reason",
//	│   │                   "from","at"}; absent for a pin older than it
//	│   ├── vault_migration → a vault migration not finished yet
//	│   │                   (vault.Migration JSON: backends and item keys,
//	│   │                   never names or values), written before its
//	│   │                   first write and removed once its obsolete
//	│   │                   copies are gone
//	│   ├── vault_unnamed → JSON list of the item keys the last migration
//	│   │                   moved without a name (servers no longer
//	│   │                   configured), for the next one from a keyring
//	│   ├── approval_gate → the owner approval gate (daemon/owner.go), JSON
//	│   │                   {"passphraseSet","failures","locks","lockedUntil"}:
//	│   │                   wrong passphrases and locks survive a restart; the
//	│   │                   passphrase's hash itself is in the vault
//	│   └── paused        → the paused servers (daemon/pause.go), JSON
//	│                       {"<server>":{"since","reason"}}: a hand-off
//	│                       survives a restart
//	├── settings/
//	│   └── <extension> → SettingsRecord JSON:
//	│                     {"revision":N,"updatedAt":"…","settings":{…canonical…}}
//	├── processes/
//	│   └── <pid, uint64 big-endian> → the supervisor's record of a process
//	│                                  group or escaped descendant it started
//	│                                  (server, pgid, start time), deleted
//	│                                  once the process is gone
//	├── actions/
//	│   └── <action id "act_…"> → action JSON: state, kind, server, tool,
//	│                            arguments (base64 of the exact bytes),
//	│                            toolDescription, fingerprints, digest,
//	│                            createdAt, expiresAt, updatedAt, reason,
//	│                            receiptId, sourceId, notSent,
//	│                            expiresBoot {"boot","at"}: the expiry on
//	│                            the boot clock (see ApprovalTTL), and
//	│                            caller {"pid","executable","client":
//	│                            {"name","version"},"via"}: who asked
//	│                            (absent in actions stored before it was
//	│                            kept; not part of the digest)
//	├── actions_by_time/
//	│   └── <createdAt unix nanos, uint64 big-endian><action id> → empty;
//	│                            walked backwards for newest-first lists
//	├── receipts/
//	│   └── <receipt id "rcpt_…"> → Receipt JSON: id, seq, prev, kind,
//	│                              server, tool, argumentsDigest,
//	│                              actionId, status, sourceId, error,
//	│                              notSent, caller (who asked; omitted
//	│                              when unknown, so older receipts keep
//	│                              their bytes), createdAt; never
//	│                              rewritten once stored
//	├── receipts_by_seq/
//	│   └── <seq, uint64 big-endian> → receipt id; 1, 2, 3, … without
//	│                                 gaps: the chain, walked in order
//	├── receipts_by_time/
//	│   └── <createdAt unix nanos, uint64 big-endian><receipt id> → empty;
//	│                            walked backwards for newest-first lists
//	├── receipt_checkpoints/
//	│   └── <fromSeq, uint64 big-endian> → Checkpoint JSON: one pruning
//	│                            run (retention.go): fromSeq, toSeq, count,
//	│                            lastId and lastHash (the last receipt
//	│                            pruned and the SHA-256 of its stored bytes,
//	│                            which the oldest kept records as prev),
//	│                            oldestAt, newestAt, at, run
//	├── tasks/
//	│   └── <server id> NUL <task id> → TaskRecord JSON: a task pikod
//	│                         created with an approved action: server,
//	│                         taskId, tool, actionId, receiptId, status,
//	│                         statusMessage, createdAt, lastUpdatedAt, ttl,
//	│                         pollInterval, cancelActionId,
//	│                         resultSourceId, resultReceiptId, and updates
//	│                         (the last 50 status changes seen: status,
//	│                         statusMessage, via, at)
//	├── pins/
//	│   └── <server id>/
//	│       └── <tool name> → Pin JSON: the definition a readOnlyTools or
//	│                         autonomousTools grant covers: server, tool,
//	│                         digest, definition (the whole definition the
//	│                         digest covers, for diffs), pinnedAt, by
//	│                         (settings, discovery or trust), replaced;
//	│                         deleted when the grant is removed
//	├── skill_pins/
//	│   └── <server id>/
//	│       └── <key: hex SHA-256 of the skill's URI> → SkillPin JSON: the
//	│                         last load of a skill: server, key, uri and
//	│                         name (redacted), digest (pikod's digest of
//	│                         its files' URIs and digests), loadedAt
//	└── sources/
//	    ├── meta/
//	    │   └── <source id "src_…"> → SourceMeta JSON: id, server, tool,
//	    │                            bytes, chars, createdAt, seq, and the
//	    │                            byte offset of every 65,536th
//	    │                            character; an evicted source keeps
//	    │                            a tombstone (evicted, evictedAt,
//	    │                            no index)
//	    ├── live/
//	    │   └── <seq, uint64 big-endian> → source id; oldest first, the
//	    │                                 eviction order; an entry
//	    │                                 leaves when its source is
//	    │                                 evicted
//	    └── data/
//	        └── <source id> → the text of an inline source (≤ 64 KiB);
//	                          larger ones are files in STATE/sources/
//
// Next to pikod.db, the tombstone file (STATE/tombstones, 0600) holds one
// line "ID STATE UNIXTIME" per decision (approved, rejected, stale) and per
// dispatch, appended and fsynced before the transaction recording it
// commits. It is not in the database on purpose: a pikod.db restored from
// an older copy cannot resurrect a decided action, because OpenLedger
// settles every prepared action the file names.
//
// Action states and the writes that move them (each one Update):
//
//	prepared ─Approve─► approved ─MarkDispatched─► dispatched ─Finish─► completed | failed | uncertain
//	prepared ─Reject─► rejected
//	prepared ─Approve after expiry─► expired   (Get and List notice it too;
//	                                            expiry is the earlier of
//	                                            expiresAt and expiresBoot)
//	prepared ─Approve with a moved fingerprint─► stale
//	prepared ─Revalidate with a moved fingerprint─► stale   (list, review)
//	dispatched ─Finish stale─► stale   (provably unsent: the tool's
//	                                    definition moved before sending)
//	BeginDirect (autonomous and read calls) starts at dispatched.
//
// At OpenLedger a dispatched action becomes uncertain (never re-sent) and
// an approved one failed (provably never sent).
//
// Redaction happens before approvals sees anything: the daemon passes the
// vault's redactor over a result before Put (and daemon/present's Preview), and over a
// receipt's error, a tool description and a pinned definition before they
// are stored, so every cut made here (a preview's text budget, a
// source.read window) cuts text that holds no secret. approvals therefore
// takes no redactor of its own.
//
// Retained sources: the exact (redacted) JSON of every executed call's
// result is a file STATE/sources/<source id> (directory 0700, files 0600,
// written to a temporary file, fsynced and renamed before its metadata
// commits). The files together stay under a cap, DefaultSourceCapBytes
// (1 GiB) unless the daemon sets another: each Put evicts the oldest
// sources until the total fits, never the new one (which may alone exceed
// the cap), and deletes their files after the tombstones commit. Opening
// the store removes temporary files, files without metadata and files of
// evicted sources that a crash left behind.
//
// The receipt chain: every receipt records, in prev, the hex SHA-256 of
// the exact stored bytes of the receipt before it ("" for seq 1), and
// meta/receipts_head the newest one's id, seq and hash. The link, the seq
// and the head are computed inside the Update that stores the receipt, from
// the head as that transaction sees it, so receipts chain in commit order
// whether AddReceipt or the background writer stores them. Deleting,
// reordering or editing a stored receipt breaks a link (or the head);
// VerifyReceipts walks receipts_by_seq/ in short read transactions,
// holding one hash at a time, and reports the first break. Whoever can
// write the file can also rebuild the chain (or put back an older, shorter
// one): it detects edits, deletions and moves of individual receipts, not
// a rewrite of the chain.
//
// Every write is on disk (fdatasync) when it returns; bbolt's Batch, which
// waits up to 10 ms for company, is never used. The writes of calls (an
// action's dispatch record and end, receipts, retained sources) go through
// a group committer: writes that arrive while a transaction is committing
// share the next one and its fsync, and a write that arrives while nothing
// commits starts at once. The end of a call with effects (its source, its
// receipt and its action's final state) is one transaction (Settle). Read
// receipts (AddReceiptAsync) are the one write nothing waits for: a
// background writer groups them into fewer transactions. Values are copied
// out before their transaction ends.
//
// Migrations, applied in order at Open and recorded in meta/schema. The
// bucket names, keys and this list are declared in schema.go, each
// migration with a name and a test of its own (schema_test.go):
//
//  1. initial: meta/ and settings/.
//  2. processes: processes/, durable process records, so a restarted
//     daemon reaps the groups a killed one left.
//  3. ledger: actions/, actions_by_time/ and receipts/.
//  4. sources: sources/ with meta/ and live/, retained original results.
//  5. source-data: sources/data/, small results (up to 64 KiB) kept inline
//     instead of in a file each.
//  6. receipt-chain: receipts_by_seq/, receipts_by_time/ and
//     meta/receipts_head. The receipts already stored are chained in
//     creation order (ties by id): each is rewritten once with its seq and
//     prev.
//  7. pins: pins/, tool-definition pins of granted tools, so a server that
//     redefines a granted tool loses the grant until the owner trusts the
//     new definition, across restarts.
//  8. tasks: tasks/, the tasks pikod created (legacy tasks utility) with
//     their creating action and receipt and the status updates seen.
//  9. receipt-checkpoints: receipt_checkpoints/ for retention, and
//     meta/receipts_stats counted from the receipts already stored.
//  10. skill-pins: skill_pins/, the file digests of each skill at its last
//     load, so a skill whose files change shows as changed until it is
//     loaded again, across restarts.
package approvals
