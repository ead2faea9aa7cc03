package contracts

// ParamsChecker is implemented by params whose required members are
// checked before the method's handler runs (after the terminal checks):
// the daemon's method table calls CheckParams once on the decoded value,
// so each refusal (missing_server, missing_action, missing_request, ...)
// is written once, here.
type ParamsChecker interface {
	CheckParams() error
}

// OwnerParams is implemented by the params of every terminal-only method:
// the owner approval passphrase the call carries ("" when none). The owner
// check reads it from the decoded params.
type OwnerParams interface {
	OwnerPassphrase() string
}

// RequireServer refuses an empty server id: the one missing_server error.
func RequireServer(id string) error {
	if id == "" {
		return Errorf(ErrInvalidArgument, ReasonMissingServer, `missing "server": name a configured server id`)
	}
	return nil
}

// RequireAction refuses an empty action id.
func RequireAction(id string) error {
	if id == "" {
		return Errorf(ErrInvalidArgument, ReasonMissingAction, `missing "actionId"`)
	}
	return nil
}

// RequireRequest refuses an empty server request id.
func RequireRequest(id string) error {
	if id == "" {
		return Errorf(ErrInvalidArgument, ReasonMissingRequest, `missing "requestId"`)
	}
	return nil
}

// CheckParams implements ParamsChecker.
func (p ServerParams) CheckParams() error { return RequireServer(p.Server) }

// CheckParams implements ParamsChecker.
func (p CatalogParams) CheckParams() error { return RequireServer(p.Server) }

// CheckParams implements ParamsChecker.
func (p ResourceParams) CheckParams() error { return RequireServer(p.Server) }

// CheckParams implements ParamsChecker.
func (p PromptParams) CheckParams() error { return RequireServer(p.Server) }

// CheckParams implements ParamsChecker.
func (p CompleteParams) CheckParams() error { return RequireServer(p.Server) }

// CheckParams implements ParamsChecker.
func (p SkillsParams) CheckParams() error { return RequireServer(p.Server) }

// CheckParams implements ParamsChecker.
func (p TasksParams) CheckParams() error { return RequireServer(p.Server) }

// CheckParams implements ParamsChecker.
func (p LoggingParams) CheckParams() error { return RequireServer(p.Server) }

// CheckParams implements ParamsChecker.
func (p AuthParams) CheckParams() error { return RequireServer(p.Server) }

// CheckParams implements ParamsChecker.
func (p TrustParams) CheckParams() error { return RequireServer(p.Server) }

// CheckParams implements ParamsChecker.
func (p ActionParams) CheckParams() error { return RequireAction(p.ActionID) }

// CheckParams implements ParamsChecker: an approval quotes the digest the
// owner reviewed.
func (p ApproveParams) CheckParams() error {
	if p.ActionID == "" || p.Digest == "" {
		return Errorf(ErrInvalidArgument, ReasonMissingAction,
			`missing "actionId" or "digest": quote the digest shown by actions.review`)
	}
	return nil
}

// CheckParams implements ParamsChecker.
func (p RequestReadParams) CheckParams() error { return RequireRequest(p.RequestID) }

// CheckParams implements ParamsChecker.
func (p RespondParams) CheckParams() error { return RequireRequest(p.RequestID) }

// CheckParams implements ParamsChecker.
func (p ProposeParams) CheckParams() error { return RequireRequest(p.RequestID) }

// CheckParams implements ParamsChecker.
func (p SourceReadParams) CheckParams() error {
	if p.SourceID == "" {
		return Errorf(ErrInvalidArgument, ReasonMissingSource, `missing "sourceId"`)
	}
	if p.Offset < 0 || p.Length < 0 {
		return Errorf(ErrInvalidArgument, ReasonInvalidWindow, `"offset" and "length" must not be negative`)
	}
	return nil
}

// OwnerPassphrase implements OwnerParams.
func (p ApproveParams) OwnerPassphrase() string { return p.Passphrase }

// OwnerPassphrase implements OwnerParams.
func (p RespondParams) OwnerPassphrase() string { return p.Passphrase }

// OwnerPassphrase implements OwnerParams.
func (p ResumeParams) OwnerPassphrase() string { return p.Passphrase }

// OwnerPassphrase implements OwnerParams.
func (p TrustParams) OwnerPassphrase() string { return p.Passphrase }

// OwnerPassphrase implements OwnerParams.
func (p PassphraseParams) OwnerPassphrase() string { return p.Passphrase }

// OwnerPassphrase implements OwnerParams.
func (p VaultMigrateParams) OwnerPassphrase() string { return p.Passphrase }
