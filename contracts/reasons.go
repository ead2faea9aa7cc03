package contracts

// The data.reason words: the second word of every error, which scripts and
// clients may branch on (the code names the class, the reason the case).
// Like the error codes they are frozen: a published word keeps its spelling
// and meaning, and testdata/reasons.golden lists every one (TestReasonsGolden
// fails when one changes or disappears; add a new one with -update).
// Call sites use these constants, never a string literal: refgen refuses a
// literal, and docs/reference/errors.md lists each word with its class, the
// packages that produce it and one of its messages.
//
// Each word's comment quotes the start of a message it comes with ("…"
// where the values go).

// Words more than one package produces.
const (
	// ReasonActionExpired ends an action not decided before it expired: nothing was sent.
	ReasonActionExpired = "action_expired"
	// ReasonActionRejected ends an action the owner rejected: nothing was sent.
	ReasonActionRejected = "action_rejected"
	// ReasonActionStale ends an action whose server or tool moved since it was prepared: nothing was sent.
	ReasonActionStale = "action_stale"
	// ReasonAnswerInvalid: the answer does not match the requested schema: …
	ReasonAnswerInvalid = "answer_invalid"
	// ReasonArgumentsTooLarge: recording a call to …/…: arguments are … characters of JSON, more than the … an …
	ReasonArgumentsTooLarge = "arguments_too_large"
	// ReasonCanceled: … was canceled before it was sent.
	ReasonCanceled = "canceled"
	// ReasonDeadlineExceeded: … ran out of time before it was sent.
	ReasonDeadlineExceeded = "deadline_exceeded"
	// ReasonDefinitionChanged: the definition of tool … on server … changed after the call was approved.
	ReasonDefinitionChanged = "definition_changed"
	// ReasonInternal is the word of code 1014: a fault in pikod itself, not in what was asked.
	ReasonInternal = "internal"
	// ReasonInvalidArgument is the class's own word, where no narrower word fits.
	ReasonInvalidArgument = "invalid_argument"
	// ReasonInvalidParams comes with JSON-RPC's invalid-params code: the params do not decode.
	ReasonInvalidParams = "invalid_params"
	// ReasonInvalidResult: the server answered with a result that is not a JSON object.
	ReasonInvalidResult = "invalid_result"
	// ReasonInvalidWindow: "offset" and "length" must not be negative.
	ReasonInvalidWindow = "invalid_window"
	// ReasonMissingServer: missing "server": name a configured server id.
	ReasonMissingServer = "missing_server"
	// ReasonPassphraseRequired: … needs the owner approval passphrase.
	ReasonPassphraseRequired = "passphrase_required"
	// ReasonProposalChanged: the proposed answer of request … changed after you read it: nothing was sent.
	ReasonProposalChanged = "proposal_changed"
	// ReasonResultTooLarge: the result of receipt … is larger than … bytes.
	ReasonResultTooLarge = "result_too_large"
	// ReasonRevisionMoved: settings are at revision …, not …
	ReasonRevisionMoved = "revision_moved"
	// ReasonShuttingDown: pikod is shutting down.
	ReasonShuttingDown = "shutting_down"
	// ReasonSourceTooLarge: source … holds … bytes, more than the … read at once: read it in windows with …
	ReasonSourceTooLarge = "source_too_large"
	// ReasonUnknownServer: no server … is configured.
	ReasonUnknownServer = "unknown_server"
	// ReasonUnknownTool: no connected server has a tool named …
	ReasonUnknownTool = "unknown_tool"
	// ReasonVaultLocked: the vault is locked, so the credentials of … cannot be read.
	ReasonVaultLocked = "vault_locked"
	// ReasonVaultVerifyFailed: the vault returned another OAuth grant for … than was written.
	ReasonVaultVerifyFailed = "vault_verify_failed"
)

// Words of the wire itself: params, settings and paths (contracts).
const (
	// ReasonInvalidInstance: invalid instance name …: use a lowercase letter followed by up to 31 lowercase letters, …
	ReasonInvalidInstance = "invalid_instance"
	// ReasonMissingAction: missing "actionId".
	ReasonMissingAction = "missing_action"
	// ReasonMissingRequest: missing "requestId".
	ReasonMissingRequest = "missing_request"
	// ReasonMissingSource: missing "sourceId".
	ReasonMissingSource = "missing_source"
	// ReasonToolsRequired: server … selects every tool (no tools list), and autonomousTools needs an explicit one.
	ReasonToolsRequired = "tools_required"
)

// Words of the socket: framing, dispatch and the terminal checks (rpc).
const (
	// ReasonInvalidRequest comes with JSON-RPC's invalid-request code: the frame is no request.
	ReasonInvalidRequest = "invalid_request"
	// ReasonMethodNotFound comes with JSON-RPC's method-not-found code: no such method.
	ReasonMethodNotFound = "method_not_found"
	// ReasonOwnerCheckUnavailable: … is terminal-only and this server has no owner check: refused.
	ReasonOwnerCheckUnavailable = "owner_check_unavailable"
	// ReasonTerminalRequired refuses a terminal-only method to a caller that is not a person at the owner's terminal (data.check says which check failed).
	ReasonTerminalRequired = "terminal_required"
	// ReasonTooManyConnections: too many connections: pikod serves at most … at once.
	ReasonTooManyConnections = "too_many_connections"
)

// Words of the ledger and its stores (approvals).
const (
	// ReasonActionConsumed: action … was already decided (it is …).
	ReasonActionConsumed = "action_consumed"
	// ReasonActionNotFound: action … was decided and is no longer in the ledger (retention removed it after …
	ReasonActionNotFound = "action_not_found"
	// ReasonActionState: action … is …, not …
	ReasonActionState = "action_state"
	// ReasonDigestMismatch: digest … is not the digest of action …
	ReasonDigestMismatch = "digest_mismatch"
	// ReasonReceiptNotFound: no receipt …
	ReasonReceiptNotFound = "receipt_not_found"
	// ReasonReceiptUnreadable: stored receipt … is not a receipt (…): the database was damaged or edited.
	ReasonReceiptUnreadable = "receipt_unreadable"
	// ReasonSourceDamaged: retained source … is damaged: …
	ReasonSourceDamaged = "source_damaged"
	// ReasonSourceEvicted: source … was evicted at … to keep retained sources within their bounds …
	ReasonSourceEvicted = "source_evicted"
	// ReasonUnknownSource: no retained source …: use the originalResultSourceId of a call result (a source goes …
	ReasonUnknownSource = "unknown_source"
)

// Words of secrets, OAuth grants and the approval passphrase (vault).
const (
	// ReasonPassphraseHashInvalid: the approval passphrase hash in the vault is not a valid argon2id hash (…).
	ReasonPassphraseHashInvalid = "passphrase_hash_invalid"
	// ReasonPassphraseInvalid: the approval passphrase is not valid UTF-8.
	ReasonPassphraseInvalid = "passphrase_invalid"
	// ReasonPassphraseTooLong: the approval passphrase must have at most … bytes.
	ReasonPassphraseTooLong = "passphrase_too_long"
	// ReasonPassphraseTooShort: the approval passphrase must have at least … characters.
	ReasonPassphraseTooShort = "passphrase_too_short"
	// ReasonVaultClosed: the vault is closed.
	ReasonVaultClosed = "vault_closed"
	// ReasonVaultCorrupt: … is not a pikod KDF file (want version 1, pbkdf2-sha256).
	ReasonVaultCorrupt = "vault_corrupt"
	// ReasonVaultDirInvalid: … is not a directory (a symlink is refused too).
	ReasonVaultDirInvalid = "vault_dir_invalid"
	// ReasonVaultDirMode: the vault directory … has mode …: it must be private to you (chmod 700 …).
	ReasonVaultDirMode = "vault_dir_mode"
	// ReasonVaultInUse: an interrupted migration left copies in the … backend, which this pikod uses now.
	ReasonVaultInUse = "vault_in_use"
	// ReasonVaultKeyFileInvalid: the vault key file … must be a regular file (a symlink is refused).
	ReasonVaultKeyFileInvalid = "vault_key_file_invalid"
	// ReasonVaultKeyFileMode: the vault key file … has mode …: it must be readable only by you (chmod 600 …).
	ReasonVaultKeyFileMode = "vault_key_file_mode"
	// ReasonVaultKeyMismatch: the vault key does not match the vault in …: …
	ReasonVaultKeyMismatch = "vault_key_mismatch"
	// ReasonVaultKeyMissing: the key file … is missing but … holds a vault.
	ReasonVaultKeyMissing = "vault_key_missing"
	// ReasonVaultMigrateConflict: the … backend already holds different values for … (from an earlier use of it).
	ReasonVaultMigrateConflict = "vault_migrate_conflict"
	// ReasonVaultMigrateSame: the vault already uses the … backend: nothing to move.
	ReasonVaultMigrateSame = "vault_migrate_same"
	// ReasonVaultMigrateSamePlace: the … and … backends keep their items in the same directory, so pikod cannot move …
	ReasonVaultMigrateSamePlace = "vault_migrate_same_place"
	// ReasonVaultNotLockable: the … vault has no passphrase to unlock.
	ReasonVaultNotLockable = "vault_not_lockable"
	// ReasonVaultNotOwner: … is owned by uid …, not by you (uid …).
	ReasonVaultNotOwner = "vault_not_owner"
	// ReasonVaultTimeout: the session bus or the secret service did not answer within …
	ReasonVaultTimeout = "vault_timeout"
	// ReasonVaultUnavailable: the keychain backend exists only on macOS.
	ReasonVaultUnavailable = "vault_unavailable"
	// ReasonVaultWrongPassphrase: wrong passphrase for the vault in …
	ReasonVaultWrongPassphrase = "vault_wrong_passphrase"
)

// Words of sessions, transports, the network guard, catalogs, calls and
// OAuth flows (mcpclient and its subpackages).
const (
	// ReasonAmbiguousKeys: arguments: in the object at …, …
	ReasonAmbiguousKeys = "ambiguous_keys"
	// ReasonAmbiguousSkill: server … lists … skills named … (…).
	ReasonAmbiguousSkill = "ambiguous_skill"
	// ReasonAmbiguousTool: name a tool either by "name" (model-facing) or by "server" and "tool", not both.
	ReasonAmbiguousTool = "ambiguous_tool"
	// ReasonArgumentsInvalid: arguments do not match the tool's input schema: …
	ReasonArgumentsInvalid = "arguments_invalid"
	// ReasonArgumentsInvalidJSON: arguments are not valid JSON: … at byte …
	ReasonArgumentsInvalidJSON = "arguments_invalid_json"
	// ReasonArgumentsNotCanonical: the arguments of tool … are not in canonical form.
	ReasonArgumentsNotCanonical = "arguments_not_canonical"
	// ReasonArgumentsNotObject: arguments must be a JSON object, not …
	ReasonArgumentsNotObject = "arguments_not_object"
	// ReasonArgumentsTooDeep: arguments nest arrays and objects more than … deep.
	ReasonArgumentsTooDeep = "arguments_too_deep"
	// ReasonCanceledOutcomeUnknown says a call was canceled after it was sent: its outcome is unknown.
	ReasonCanceledOutcomeUnknown = "canceled_outcome_unknown"
	// ReasonCatalogStale: the tools of … could not be read again after the server announced a change, so the …
	ReasonCatalogStale = "catalog_stale"
	// ReasonCompletionsNotOffered refuses completion on a server whose capabilities do not offer it.
	ReasonCompletionsNotOffered = "completions_not_offered"
	// ReasonConnectCanceled: connecting to … was canceled by a disconnect.
	ReasonConnectCanceled = "connect_canceled"
	// ReasonConnectFailed says a connection could not be set up (the message says why).
	ReasonConnectFailed = "connect_failed"
	// ReasonConnectionChanged: server … no longer offers tool …
	ReasonConnectionChanged = "connection_changed"
	// ReasonConnectionLost: the connection to … ended before the call of … was sent.
	ReasonConnectionLost = "connection_lost"
	// ReasonConnectionLostOutcomeUnknown says the connection ended while a call was out: its outcome is unknown.
	ReasonConnectionLostOutcomeUnknown = "connection_lost_outcome_unknown"
	// ReasonDisconnected: server … was disconnected after this request was made.
	ReasonDisconnected = "disconnected"
	// ReasonInputNotGiven: the server asked for input that was not given (…).
	ReasonInputNotGiven = "input_not_given"
	// ReasonInputRefused refuses a server that asked for more inputs at once than pikod answers.
	ReasonInputRefused = "input_refused"
	// ReasonInputRequired: the server asked for input pikod cannot give yet (resultType input_required).
	ReasonInputRequired = "input_required"
	// ReasonInputRoundsExceeded refuses a server that asked for input more rounds than pikod answers.
	ReasonInputRoundsExceeded = "input_rounds_exceeded"
	// ReasonInvalidArguments: the arguments are not a JSON object.
	ReasonInvalidArguments = "invalid_arguments"
	// ReasonInvalidCompletionArguments refuses completion arguments that do not fit: nothing was sent.
	ReasonInvalidCompletionArguments = "invalid_completion_arguments"
	// ReasonInvalidHeaderAnnotations: the tool's x-mcp-header annotations are invalid (…), so it cannot be called on this …
	ReasonInvalidHeaderAnnotations = "invalid_header_annotations"
	// ReasonInvalidHeaderArgument: argument … cannot travel in header …: only strings, booleans and integers within …
	ReasonInvalidHeaderArgument = "invalid_header_argument"
	// ReasonInvalidLogLevel: unknown log level …: use one of …
	ReasonInvalidLogLevel = "invalid_log_level"
	// ReasonInvalidPromptArguments refuses prompt arguments that do not fit the prompt: nothing was sent.
	ReasonInvalidPromptArguments = "invalid_prompt_arguments"
	// ReasonInvalidReference: name exactly one of "prompt" (a prompt's name) or "template" (a resource template's URI …
	ReasonInvalidReference = "invalid_reference"
	// ReasonInvalidSkill: … is not the URI of a SKILL.md: a skill is named by its SKILL.md's URI (or by its name).
	ReasonInvalidSkill = "invalid_skill"
	// ReasonInvalidSkillEntry: skill … of server … cannot be loaded: …
	ReasonInvalidSkillEntry = "invalid_skill_entry"
	// ReasonInvalidTask: "taskId" is longer than … bytes.
	ReasonInvalidTask = "invalid_task"
	// ReasonInvalidURI: the resource URI is … bytes long.
	ReasonInvalidURI = "invalid_uri"
	// ReasonIssuerMismatch: the authorization response came from issuer …, not from …, the server this sign-in …
	ReasonIssuerMismatch = "issuer_mismatch"
	// ReasonIssuerMissing: the authorization response has no iss although … says it always sends one: pikod did …
	ReasonIssuerMissing = "issuer_missing"
	// ReasonLoggedOut ends a sign-in that a logout ended.
	ReasonLoggedOut = "logged_out"
	// ReasonLoggingNotOffered: server … does not offer logging (its capabilities have no "logging").
	ReasonLoggingNotOffered = "logging_not_offered"
	// ReasonMissingArgument: missing "argument": name the argument to complete.
	ReasonMissingArgument = "missing_argument"
	// ReasonMissingFile: missing "file": name one of the skill's files (its path, like references/GUIDE.md, or its …
	ReasonMissingFile = "missing_file"
	// ReasonMissingPrompt: missing "name": name one of the server's prompts.
	ReasonMissingPrompt = "missing_prompt"
	// ReasonMissingSkill: missing "skill": name one of the server's skills (its name, or the URI of its SKILL.md).
	ReasonMissingSkill = "missing_skill"
	// ReasonMissingTask: missing "taskId": list the server's tasks with 'pikoctl mcp tasks …'.
	ReasonMissingTask = "missing_task"
	// ReasonMissingTool: missing "server" and "tool" (or "name"): say which tool to call.
	ReasonMissingTool = "missing_tool"
	// ReasonMissingURI: missing "uri": name the resource URI, as the server lists it.
	ReasonMissingURI = "missing_uri"
	// ReasonNeedsAuth: the authorization server refused the … grant of … (…).
	ReasonNeedsAuth = "needs_auth"
	// ReasonNotSent says a call ran out of time before it was sent: nothing was sent.
	ReasonNotSent = "not_sent"
	// ReasonOAuthAssertionExpired: … of … expired at …
	ReasonOAuthAssertionExpired = "oauth_assertion_expired"
	// ReasonOAuthBadAssertion: … is not one token: it holds spaces or control characters.
	ReasonOAuthBadAssertion = "oauth_bad_assertion"
	// ReasonOAuthBadAuthorizationEndpoint: the authorization endpoint of … is plain http on another host than the server.
	ReasonOAuthBadAuthorizationEndpoint = "oauth_bad_authorization_endpoint"
	// ReasonOAuthBadDocument: … is not a valid JSON metadata document: …
	ReasonOAuthBadDocument = "oauth_bad_document"
	// ReasonOAuthBadDPoPKey: the stored DPoP key is not the key … the grant is bound to.
	ReasonOAuthBadDPoPKey = "oauth_bad_dpop_key"
	// ReasonOAuthBadPrivateKey refuses a stored oauthPrivateKey that cannot sign.
	ReasonOAuthBadPrivateKey = "oauth_bad_private_key"
	// ReasonOAuthBadRedirect refuses a pasted redirect URL that is not the sign-in's callback address.
	ReasonOAuthBadRedirect = "oauth_bad_redirect"
	// ReasonOAuthBadTokenResponse: the identity provider issued … instead of an identity assertion authorization grant.
	ReasonOAuthBadTokenResponse = "oauth_bad_token_response"
	// ReasonOAuthCallbackPortBusy: cannot listen for the sign-in callback on 127.0.0.1:…: …
	ReasonOAuthCallbackPortBusy = "oauth_callback_port_busy"
	// ReasonOAuthCallbackUsed refuses a second callback to a sign-in that was already completed or refused.
	ReasonOAuthCallbackUsed = "oauth_callback_used"
	// ReasonOAuthDiscoveryFailed: the server URL cannot be parsed.
	ReasonOAuthDiscoveryFailed = "oauth_discovery_failed"
	// ReasonOAuthDocumentTooLarge: … is larger than … bytes.
	ReasonOAuthDocumentTooLarge = "oauth_document_too_large"
	// ReasonOAuthDPoPNotBound: the token response of … has token_type …, not DPoP: the authorization server did not …
	ReasonOAuthDPoPNotBound = "oauth_dpop_not_bound"
	// ReasonOAuthDPoPRequired: server … takes DPoP-bound tokens only (its resource metadata sets …
	ReasonOAuthDPoPRequired = "oauth_dpop_required"
	// ReasonOAuthDPoPUnsupported: oauth.dpop is true, but the authorization server … of … lists no …
	ReasonOAuthDPoPUnsupported = "oauth_dpop_unsupported"
	// ReasonOAuthFailed says a sign-in failed (the message says why).
	ReasonOAuthFailed = "oauth_failed"
	// ReasonOAuthFlowCancelled ends a sign-in that was cancelled or ended because pikod is stopping.
	ReasonOAuthFlowCancelled = "oauth_flow_cancelled"
	// ReasonOAuthFlowEnded: the sign-in of … this address belongs to has already ended.
	ReasonOAuthFlowEnded = "oauth_flow_ended"
	// ReasonOAuthFlowExpired: the sign-in of … expired: no callback within …
	ReasonOAuthFlowExpired = "oauth_flow_expired"
	// ReasonOAuthNoAssertion: jwt_bearer for … reads its assertion from …: …
	ReasonOAuthNoAssertion = "oauth_no_assertion"
	// ReasonOAuthNoAuthorizationEndpoint: the authorization server … of … has no authorization_endpoint, so no browser sign-in …
	ReasonOAuthNoAuthorizationEndpoint = "oauth_no_authorization_endpoint"
	// ReasonOAuthNoClientSecret: … needs the client secret, and none is stored.
	ReasonOAuthNoClientSecret = "oauth_no_client_secret"
	// ReasonOAuthNoCode: the authorization response for … carries no code.
	ReasonOAuthNoCode = "oauth_no_code"
	// ReasonOAuthNoFlow: no sign-in of … is pending.
	ReasonOAuthNoFlow = "oauth_no_flow"
	// ReasonOAuthNoIdentityAssertion: cross_app_access for … needs the identity assertion from the identity provider, and …
	ReasonOAuthNoIdentityAssertion = "oauth_no_identity_assertion"
	// ReasonOAuthNoPrivateKey: server … uses private_key_jwt, but no oauthPrivateKey is stored.
	ReasonOAuthNoPrivateKey = "oauth_no_private_key"
	// ReasonOAuthNoRegistration: the authorization server … of … offers no dynamic registration, and no client is …
	ReasonOAuthNoRegistration = "oauth_no_registration"
	// ReasonOAuthNotApplicable: server … does not use OAuth: it is a … server, or its stored credentials carry a …
	ReasonOAuthNotApplicable = "oauth_not_applicable"
	// ReasonOAuthPKCEUnsupported: the authorization server … of … does not list PKCE S256 in …
	ReasonOAuthPKCEUnsupported = "oauth_pkce_unsupported"
	// ReasonOAuthRegistrationRefused: the registration answer of … is not valid JSON (…).
	ReasonOAuthRegistrationRefused = "oauth_registration_refused"
	// ReasonOAuthStateMismatch refuses a sign-in callback whose state is not the latest sign-in's.
	ReasonOAuthStateMismatch = "oauth_state_mismatch"
	// ReasonOAuthUnsupportedAlg: the stored private key signs with …, but the authorization server accepts …
	ReasonOAuthUnsupportedAlg = "oauth_unsupported_alg"
	// ReasonOAuthUnsupportedAuthMethod: token endpoint authentication … is not supported.
	ReasonOAuthUnsupportedAuthMethod = "oauth_unsupported_auth_method"
	// ReasonPromptsDisabled refuses prompts of a server whose settings switch them off.
	ReasonPromptsDisabled = "prompts_disabled"
	// ReasonPromptsNotOffered refuses prompts of a server whose capabilities have none.
	ReasonPromptsNotOffered = "prompts_not_offered"
	// ReasonProtocolMismatch: server … answered initialize with protocol …, which has no initialize handshake.
	ReasonProtocolMismatch = "protocol_mismatch"
	// ReasonResourceMismatch: the protected resource metadata is for …, not for this server (…): …
	ReasonResourceMismatch = "resource_mismatch"
	// ReasonResourcesDisabled refuses resources of a server whose settings switch them off.
	ReasonResourcesDisabled = "resources_disabled"
	// ReasonResourcesNotOffered refuses resources of a server whose capabilities have none.
	ReasonResourcesNotOffered = "resources_not_offered"
	// ReasonScopeNotInSettings: server … asks for scope …, which oauth.scope does not include.
	ReasonScopeNotInSettings = "scope_not_in_settings"
	// ReasonServerDisabled: server … is disabled.
	ReasonServerDisabled = "server_disabled"
	// ReasonServerRemoved: server … was reconfigured or removed while connecting.
	ReasonServerRemoved = "server_removed"
	// ReasonSessionExpired: … on … was refused: the server no longer knows this session (HTTP 404), so it did not …
	ReasonSessionExpired = "session_expired"
	// ReasonSkillChanged: skill … of server … changed since it was loaded (its files or their digests differ …
	ReasonSkillChanged = "skill_changed"
	// ReasonSkillDigestMismatch: … failed the digest check: … has the SHA-256 …, and its entry says …
	ReasonSkillDigestMismatch = "skill_digest_mismatch"
	// ReasonSkillDynamic: skill … of server … cannot be loaded: …
	ReasonSkillDynamic = "skill_dynamic"
	// ReasonSkillFileUnlisted: skill … of server … lists no file …: a file its entry does not list is a …
	ReasonSkillFileUnlisted = "skill_file_unlisted"
	// ReasonSkillFrontmatterMismatch: … failed the frontmatter check: SKILL.md …
	ReasonSkillFrontmatterMismatch = "skill_frontmatter_mismatch"
	// ReasonSkillNotLoaded: skill … of server … is not loaded (or changed since it was).
	ReasonSkillNotLoaded = "skill_not_loaded"
	// ReasonSkillSizeMismatch: … failed the size check: … is … bytes, and its entry says …
	ReasonSkillSizeMismatch = "skill_size_mismatch"
	// ReasonSkillTooLarge: skill … of server … cannot be loaded: …
	ReasonSkillTooLarge = "skill_too_large"
	// ReasonSkillUnreadable: …: the answer to resources/read of … is not the file (…).
	ReasonSkillUnreadable = "skill_unreadable"
	// ReasonSkillsNotOffered: server … does not offer skills (its capabilities declare no extension …).
	ReasonSkillsNotOffered = "skills_not_offered"
	// ReasonStepUpLimit: server … still refuses for lack of scope after … authorization requests.
	ReasonStepUpLimit = "step_up_limit"
	// ReasonSubscribeFailed says a server did not honour a resource subscription.
	ReasonSubscribeFailed = "subscribe_failed"
	// ReasonSubscribeRefused: … on …: the server's acknowledgment of the subscription stream leaves the URI out.
	ReasonSubscribeRefused = "subscribe_refused"
	// ReasonSubscribeUnsupported: server … does not offer resource subscriptions (its resources capability has no …
	ReasonSubscribeUnsupported = "subscribe_unsupported"
	// ReasonTaskForbidden: tool … of server … does not support tasks (its execution.taskSupport is …).
	ReasonTaskForbidden = "task_forbidden"
	// ReasonTaskRequired: tool … of server … can only be called as a task (execution.taskSupport is required).
	ReasonTaskRequired = "task_required"
	// ReasonTasksCancelNotOffered refuses task cancellation on a server that does not offer it.
	ReasonTasksCancelNotOffered = "tasks.cancel_not_offered"
	// ReasonTasksListNotOffered refuses a list of tasks from a server that does not offer one.
	ReasonTasksListNotOffered = "tasks.list_not_offered"
	// ReasonTasksRequestsToolsCallNotOffered refuses a task-augmented tool call on a server that does not offer one.
	ReasonTasksRequestsToolsCallNotOffered = "tasks.requests.tools.call_not_offered"
	// ReasonTasksNotOffered refuses tasks on a server whose capabilities have none.
	ReasonTasksNotOffered = "tasks_not_offered"
	// ReasonTasksUnsupported: tasks are not part of this protocol revision: server … speaks …
	ReasonTasksUnsupported = "tasks_unsupported"
	// ReasonTimeoutOutcomeUnknown says a call timed out after it was sent: its outcome is unknown.
	ReasonTimeoutOutcomeUnknown = "timeout_outcome_unknown"
	// ReasonToolNotSelected: tool … of server … is not selected for execution.
	ReasonToolNotSelected = "tool_not_selected"
	// ReasonToolSchemaInvalid: the tool's schema cannot be used: …
	ReasonToolSchemaInvalid = "tool_schema_invalid"
	// ReasonUnexpectedCursor: only op "list" takes a "cursor".
	ReasonUnexpectedCursor = "unexpected_cursor"
	// ReasonUnexpectedTask: op "list" takes no "taskId".
	ReasonUnexpectedTask = "unexpected_task"
	// ReasonUnknownPrompt refuses a prompt name the server does not list: nothing was sent.
	ReasonUnknownPrompt = "unknown_prompt"
	// ReasonUnknownResource refuses a resource URI the server does not list: nothing was sent.
	ReasonUnknownResource = "unknown_resource"
	// ReasonUnknownSkill refuses a skill the server does not list: nothing was sent.
	ReasonUnknownSkill = "unknown_skill"
	// ReasonUnknownTemplate: server … lists no resource template …
	ReasonUnknownTemplate = "unknown_template"
)

// Words of the daemon's methods (daemon).
const (
	// ReasonActionPending: action … is …: it has no result yet.
	ReasonActionPending = "action_pending"
	// ReasonAnswerIsPassphrase: … is your approval passphrase: pikod never sends it to a server.
	ReasonAnswerIsPassphrase = "answer_is_passphrase"
	// ReasonApprovalsLocked: terminal-only methods are locked until … after … wrong approval passphrases.
	ReasonApprovalsLocked = "approvals_locked"
	// ReasonArtifactEscapes: … leaves the artifactDirectory … of server … through a symlink: refused.
	ReasonArtifactEscapes = "artifact_escapes"
	// ReasonArtifactMissing: artifact … does not exist (any more).
	ReasonArtifactMissing = "artifact_missing"
	// ReasonArtifactNotReported: the result of receipt … does not name …
	ReasonArtifactNotReported = "artifact_not_reported"
	// ReasonArtifactTooLarge: artifact … is larger than … bytes: it cannot be imported.
	ReasonArtifactTooLarge = "artifact_too_large"
	// ReasonCallCompleted carries the error a completed call's receipt records.
	ReasonCallCompleted = "call_completed"
	// ReasonCallFailed carries why an approved call failed.
	ReasonCallFailed = "call_failed"
	// ReasonCallUncertain says an approved call's outcome is unknown: the server may have acted on it.
	ReasonCallUncertain = "call_uncertain"
	// ReasonCredentialsReenter: the stored credentials of … were entered for a different command, arguments, working …
	ReasonCredentialsReenter = "credentials_reenter"
	// ReasonDefinitionMoved: the current definition of tool … of server … (digest …) is not one you reviewed.
	ReasonDefinitionMoved = "definition_moved"
	// ReasonExportExists: … already exists.
	ReasonExportExists = "export_exists"
	// ReasonExportFailed says a receipts export could not be written (the message says why).
	ReasonExportFailed = "export_failed"
	// ReasonInvalidAction: "action" must be "accept", "decline" or "cancel".
	ReasonInvalidAction = "invalid_action"
	// ReasonInvalidAnswer: give "text" or "useProposal", not both.
	ReasonInvalidAnswer = "invalid_answer"
	// ReasonInvalidContent: "content" must be a JSON object of the requested fields.
	ReasonInvalidContent = "invalid_content"
	// ReasonInvalidCredentials refuses a credential object that does not validate (data.problems lists why).
	ReasonInvalidCredentials = "invalid_credentials"
	// ReasonInvalidDecision: "decision" must be "approve" or "reject".
	ReasonInvalidDecision = "invalid_decision"
	// ReasonInvalidExportPath: the export path … must be a clean absolute path.
	ReasonInvalidExportPath = "invalid_export_path"
	// ReasonInvalidLimit: "limit" must be between 1 and … (0 or absent: …).
	ReasonInvalidLimit = "invalid_limit"
	// ReasonInvalidOp: "op" must be "diff" or "accept".
	ReasonInvalidOp = "invalid_op"
	// ReasonInvalidPath: artifact URI … names another host.
	ReasonInvalidPath = "invalid_path"
	// ReasonInvalidProposal: "text" must be 1 to … characters of UTF-8.
	ReasonInvalidProposal = "invalid_proposal"
	// ReasonInvalidReason: the pause reason must be at most … bytes of UTF-8 text on one line, without control …
	ReasonInvalidReason = "invalid_reason"
	// ReasonInvalidReceiptsQuery: "prune" applies the retention bounds and takes no other member.
	ReasonInvalidReceiptsQuery = "invalid_receipts_query"
	// ReasonInvalidSettings: missing "settings": send {"extension":"mcp","settings":{"servers":[...]}}.
	ReasonInvalidSettings = "invalid_settings"
	// ReasonInvalidSince: "since" must be an RFC 3339 time such as 2026-03-01T12:00:00Z (got …).
	ReasonInvalidSince = "invalid_since"
	// ReasonInvalidWatch refuses watch params that name unknown servers or kinds.
	ReasonInvalidWatch = "invalid_watch"
	// ReasonMissingArtifact: name the file with "path" and the completed call that reported it with "receiptId".
	ReasonMissingArtifact = "missing_artifact"
	// ReasonMissingLevel: missing "level": use one of …
	ReasonMissingLevel = "missing_level"
	// ReasonMissingQuery: missing "query": give the words to search for.
	ReasonMissingQuery = "missing_query"
	// ReasonNoArtifactDirectory: server … has no artifactDirectory: its files cannot be read.
	ReasonNoArtifactDirectory = "no_artifact_directory"
	// ReasonNoProposal: request … has no proposed answer.
	ReasonNoProposal = "no_proposal"
	// ReasonNotAFile: artifact … is not a regular file.
	ReasonNotAFile = "not_a_file"
	// ReasonNotConnected: server … is not connected, so its current definitions are unknown.
	ReasonNotConnected = "not_connected"
	// ReasonNotGranted: tool … of server … is not in readOnlyTools or autonomousTools: no grant is pinned to …
	ReasonNotGranted = "not_granted"
	// ReasonNotImplemented: … is not implemented yet.
	ReasonNotImplemented = "not_implemented"
	// ReasonNotSampling: request … is an elicitation: only the owner answers it.
	ReasonNotSampling = "not_sampling"
	// ReasonNothingChanged refuses a trust accept when the definitions are already the pinned ones.
	ReasonNothingChanged = "nothing_changed"
	// ReasonOutsideArtifactDirectory: … is not inside the artifactDirectory … of server …
	ReasonOutsideArtifactDirectory = "outside_artifact_directory"
	// ReasonPassphraseAlreadySet: an approval passphrase is already set.
	ReasonPassphraseAlreadySet = "passphrase_already_set"
	// ReasonPassphraseMissing: an approval passphrase is set but its hash is no longer in the vault, so … cannot be …
	ReasonPassphraseMissing = "passphrase_missing"
	// ReasonPassphraseNotSet: no approval passphrase is set.
	ReasonPassphraseNotSet = "passphrase_not_set"
	// ReasonPassphraseWrong: wrong approval passphrase.
	ReasonPassphraseWrong = "passphrase_wrong"
	// ReasonProposalDigestRequired: "useProposal" needs "proposalDigest": the proposalDigest of the proposal you were shown.
	ReasonProposalDigestRequired = "proposal_digest_required"
	// ReasonQueryTooLong: the query is longer than … bytes.
	ReasonQueryTooLong = "query_too_long"
	// ReasonReceiptNotCompleted: receipt … is … without a retained result: only a completed call reports artifacts.
	ReasonReceiptNotCompleted = "receipt_not_completed"
	// ReasonReceiptOfAnotherServer: receipt … is of server …, not …
	ReasonReceiptOfAnotherServer = "receipt_of_another_server"
	// ReasonReconnectRequired: the credentials of … changed since it connected.
	ReasonReconnectRequired = "reconnect_required"
	// ReasonRequestDecided refuses an answer to a server request that was already answered, declined or ended.
	ReasonRequestDecided = "request_decided"
	// ReasonSchemaInvalid: the requested schema cannot be checked (…).
	ReasonSchemaInvalid = "schema_invalid"
	// ReasonStorageFull: compacting pikod.db needs about … bytes free for its copy, and the disk holding … has …
	ReasonStorageFull = "storage_full"
	// ReasonUnexpectedFile: op … takes no "file": read a skill's file with op "read".
	ReasonUnexpectedFile = "unexpected_file"
	// ReasonUnexpectedName: op "list" takes no "name" or "arguments": get a prompt with op "get".
	ReasonUnexpectedName = "unexpected_name"
	// ReasonUnexpectedSkill: op "list" takes no "skill": load one with op "load".
	ReasonUnexpectedSkill = "unexpected_skill"
	// ReasonUnexpectedURI: op … takes no "uri": read a resource with op "read".
	ReasonUnexpectedURI = "unexpected_uri"
	// ReasonUnknownExtension: unknown extension …
	ReasonUnknownExtension = "unknown_extension"
	// ReasonUnknownRequest: no server request …
	ReasonUnknownRequest = "unknown_request"
	// ReasonUnsafeArtifactDirectory: artifactDirectory … is a symlink.
	ReasonUnsafeArtifactDirectory = "unsafe_artifact_directory"
	// ReasonVaultMigrateOverride refuses a vault migration while --vault (or PIKO_VAULT) overrides the pinned backend.
	ReasonVaultMigrateOverride = "vault_migrate_override"
	// ReasonVaultUnreadable: the vault holds an unreadable OAuth grant for …
	ReasonVaultUnreadable = "vault_unreadable"
)

// Words pikoctl produces itself, before or after asking the daemon
// (cmd/pikoctl).
const (
	// ReasonAmbiguousAction: … is the start of … action ids: …
	ReasonAmbiguousAction = "ambiguous_action"
	// ReasonEntryExists: … already has a server named … that is not pikod's bridge (it runs …): nothing was …
	ReasonEntryExists = "entry_exists"
	// ReasonFileExists: refusing to overwrite …: it differs from the generated file.
	ReasonFileExists = "file_exists"
	// ReasonForeignSettings: … holds another client's MCP configuration (…), not pikod settings …
	ReasonForeignSettings = "foreign_settings"
	// ReasonHostFileChanged: … changed while pikoctl was editing it (the host may have written it): nothing was …
	ReasonHostFileChanged = "host_file_changed"
	// ReasonInputTooLarge: reading …: larger than … MiB, the daemon's message limit.
	ReasonInputTooLarge = "input_too_large"
	// ReasonInvalidHostFile refuses to edit a host's MCP configuration file pikoctl cannot parse.
	ReasonInvalidHostFile = "invalid_host_file"
	// ReasonInvalidImport: … is neither JSON nor TOML: …
	ReasonInvalidImport = "invalid_import"
	// ReasonInvalidJSON refuses a file or argument pikoctl cannot parse as JSON.
	ReasonInvalidJSON = "invalid_json"
	// ReasonInvalidRecord: … is not a record pikoctl wrote (…): fix or remove it.
	ReasonInvalidRecord = "invalid_record"
	// ReasonNoBrowser: no browser found in PATH (looked for …).
	ReasonNoBrowser = "no_browser"
	// ReasonNotBridge: … in … is not pikod's bridge (it runs …): nothing was removed.
	ReasonNotBridge = "not_bridge"
	// ReasonNotExecutable: checking the pikod binary: … is not an executable file.
	ReasonNotExecutable = "not_executable"
	// ReasonNotGenerated: refusing to remove …: pikoctl did not write it.
	ReasonNotGenerated = "not_generated"
	// ReasonPikodNotFound: finding the pikod binary: it is neither next to pikoctl nor in PATH.
	ReasonPikodNotFound = "pikod_not_found"
	// ReasonServerExists: server … is already configured.
	ReasonServerExists = "server_exists"
	// ReasonUnknownAction: no action id starts with …
	ReasonUnknownAction = "unknown_action"
	// ReasonUnsupportedOS: finding the configuration file on …: only linux and darwin are supported.
	ReasonUnsupportedOS = "unsupported_os"
)
