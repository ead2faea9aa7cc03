package daemon

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/pikod/pikod/approvals"
	"github.com/pikod/pikod/contracts"
	"github.com/pikod/pikod/daemon/present"
	"github.com/pikod/pikod/mcpclient"
	"github.com/pikod/pikod/rpc"
	"github.com/pikod/pikod/vault"
)

// skillPinStore keeps the supervisor's skill pins in the database, by
// mcpclient.SkillKey; the URI and name kept with them are the server's
// text, and redacted (pikod.db holds no credential value).
type skillPinStore struct {
	db  *approvals.DB
	red *vault.Redactor
}

func (s skillPinStore) LoadSkills(server string) (map[string]mcpclient.SkillPin, error) {
	pins, err := s.db.SkillPins(server)
	if err != nil {
		return nil, err
	}
	out := make(map[string]mcpclient.SkillPin, len(pins))
	for k, p := range pins {
		out[k] = mcpclient.SkillPin{Key: k, URI: p.URI, Name: p.Name, Digest: p.Digest, LoadedAt: p.LoadedAt}
	}
	return out, nil
}

func (s skillPinStore) PinSkill(server string, p mcpclient.SkillPin) error {
	return s.db.PinSkill(approvals.SkillPin{Server: server, Key: p.Key, URI: clipText(s.red.Text(p.URI), maxReceiptURIChars),
		Name: clipText(s.red.Text(p.Name), 200), Digest: p.Digest, LoadedAt: p.LoadedAt})
}

// skills serves extensions.mcp.skills.
func (d *daemon) skills(ctx context.Context, req *rpc.Request, p *contracts.SkillsParams) (any, error) {
	if p.Op == "" {
		p.Op = contracts.SkillOpList
	}
	if p.File != "" && p.Op != contracts.SkillOpRead {
		return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonUnexpectedFile, `op %q takes no "file": read a skill's file with op "read"`, clipText(p.Op, 40))
	}
	switch p.Op {
	case contracts.SkillOpList:
		if p.Skill != "" {
			return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonUnexpectedSkill, `op "list" takes no "skill": load one with op "load"`)
		}
		l, err := d.sup.Skills(ctx, p.Server)
		if err != nil {
			return nil, err
		}
		return contracts.SkillListResult{Server: p.Server, Op: p.Op, Skills: l.Skills, Complete: l.Complete, Problem: l.Problem}, nil
	case contracts.SkillOpGet:
		out, err := d.sup.GetSkill(ctx, p.Server, p.Skill)
		if err != nil {
			return nil, err
		}
		return contracts.SkillGetResult{Server: p.Server, Op: p.Op, Skill: out.Skill, Listed: out.Listed, Differs: out.Differs}, nil
	case contracts.SkillOpLoad, contracts.SkillOpRead:
		if err := d.checkRotated(p.Server); err != nil {
			return nil, err
		}
		var out *mcpclient.SkillOutcome
		var err error
		if p.Op == contracts.SkillOpLoad {
			out, err = d.sup.LoadSkill(ctx, p.Server, p.Skill)
		} else {
			out, err = d.sup.ReadSkillFile(ctx, p.Server, p.Skill, p.File)
		}
		if err != nil {
			return nil, err
		}
		return d.skillEvidence(req, *p, out)
	}
	return nil, contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidOp, `"op" must be "list", "get", "load" or "read", not %q`, clipText(p.Op, 40))
}

// skillEvidence retains a verified skill file's read (the original result,
// as a resource read's is), leaves a receipt naming the skill and the
// digest of its files, and answers the file's text as bounded, safe
// evidence.
func (d *daemon) skillEvidence(req *rpc.Request, p contracts.SkillsParams, out *mcpclient.SkillOutcome) (any, error) {
	view := d.answerView(req, p.Server)
	kept := d.keptView(req)
	fileURI := clipText(kept.Text(out.File.URI), maxReceiptURIChars)
	meta, err := d.sources.PutDeferred(p.Server, fileURI, view.JSON(out.Result))
	if err != nil {
		d.log.Error().Err(err).Str("server", p.Server).Msg("retaining a skill file")
		return nil, fmt.Errorf("the skill's file was read and verified but could not be retained: %w", err)
	}
	kind := contracts.ReceiptSkillLoad
	if p.Op == contracts.SkillOpRead {
		kind = contracts.ReceiptSkillRead
	}
	// The receipt binds what was verified: the file and the skill's files
	// as the entry listed them.
	rec := d.ledger.AddReceiptAsync(approvals.Receipt{Kind: kind, Server: p.Server, Tool: fileURI,
		ArgumentsDigest: contracts.SHA256Hex([]byte(out.File.URI + "\x00" + out.File.Digest + "\x00" + out.Skill.Digest)),
		Status:          contracts.CallCompleted, SourceID: meta.ID, Caller: req.Caller()})
	var text string
	// Bytes sent as a blob are shown only when they are text (a text/*
	// type, valid UTF-8); text contents always are.
	truncated, binary := false, !utf8.Valid(out.Data) || (out.Blob && !strings.HasPrefix(out.MimeType, "text/"))
	if !binary {
		text, truncated = present.PreviewText(view.Text(string(out.Data)), present.PreviewLimits{})
	}
	d.log.Debug().Str("server", p.Server).Str("source", meta.ID).Str("receipt", rec.ID).Str("op", p.Op).Msg("skill file verified")
	if p.Op == contracts.SkillOpLoad {
		return contracts.SkillLoadResult{Server: p.Server, Op: p.Op, URI: out.Skill.URI, Name: out.Skill.Name,
			Description: out.Skill.Description, Digest: out.Skill.Digest, Verified: out.Verified, Text: text,
			Evidence: contracts.SkillEvidence, Truncated: truncated, Files: out.Skill.Files,
			OriginalResultSourceID: meta.ID, ReceiptID: rec.ID, ReceiptKind: rec.Kind}, nil
	}
	return contracts.SkillReadResult{Server: p.Server, Op: p.Op, Skill: out.Skill.URI, URI: out.File.URI, Path: out.File.Path,
		MimeType: contracts.SafeText(out.MimeType, contracts.OneLine, 200), Size: out.File.Size, Verified: out.Verified,
		Text: text, Binary: binary, Evidence: contracts.SkillEvidence, Truncated: truncated,
		OriginalResultSourceID: meta.ID, ReceiptID: rec.ID, ReceiptKind: rec.Kind}, nil
}
