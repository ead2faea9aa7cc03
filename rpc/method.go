package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/pikod/pikod/contracts"
)

// Method is one row of the served method table: how a method's params are
// decoded and checked, and the function that serves them. Build one with
// Handle (typed params, decoded once) and add it with Server.Handle; a
// bare HandlerFunc (Server.Register) is a row whose handler reads the raw
// params itself.
//
// For a typed row the server decodes the params member once, strictly
// (DecodeParams), into a fresh *P, before the terminal checks; the
// exemption of a terminal-only method (contracts.MethodInfo.Exempt) is
// read from that value, the owner check reads it (Request.Decoded), and
// the handler receives it. Nothing decodes the params again.
type Method struct {
	// decode returns the params the row serves; strict reports whether a
	// decode error is the request's answer (typed rows) or only makes the
	// call not exempt (raw rows, whose handler decodes).
	decode func(raw json.RawMessage) (any, error)
	strict bool
	serve  func(ctx context.Context, req *Request, params any) (any, error)
	// ptype is *P for a typed row; nil for a raw one.
	ptype reflect.Type
	// secret is the message of every decode error of a row whose params
	// hold secrets ("" describes the error: field and type).
	secret string
	// mapErr, when set, rewrites every error the row answers after the
	// terminal checks: decoding, checking and the handler's.
	mapErr func(error) error
	// exempt is the path of the exemption member in the decoded params
	// (set by the server from the method table); nil when none.
	exempt      []int
	exemptValue string
}

// MethodOption adjusts a Method.
type MethodOption func(*Method)

// SecretParams marks a method whose params hold secrets: a decode error
// answers invalid_params with message instead of naming the member and
// its type (which could quote a secret).
func SecretParams(message string) MethodOption {
	return func(m *Method) { m.secret = message }
}

// MapErrors rewrites every error the method answers after the terminal
// checks (decoding, checking, the handler's), as the calls do to mark
// that nothing was sent.
func MapErrors(f func(error) error) MethodOption {
	return func(m *Method) { m.mapErr = f }
}

// Handle builds the row of a method whose params are a P and whose result
// is an R: the server decodes the params once into a fresh *P (strictly:
// unknown members, wrong types and trailing data answer invalid_params),
// runs P's contracts.ParamsChecker when it has one (after the terminal
// checks, before fn), and encodes fn's result once.
func Handle[P, R any](fn func(ctx context.Context, req *Request, p *P) (R, error), opts ...MethodOption) Method {
	m := Method{
		strict: true,
		ptype:  reflect.TypeFor[*P](),
		decode: func(raw json.RawMessage) (any, error) {
			p := new(P)
			if err := DecodeParams(raw, p); err != nil {
				return nil, err
			}
			return p, nil
		},
		serve: func(ctx context.Context, req *Request, params any) (any, error) {
			p := params.(*P)
			if c, ok := any(p).(contracts.ParamsChecker); ok {
				if err := c.CheckParams(); err != nil {
					return nil, err
				}
			}
			return fn(ctx, req, p)
		},
	}
	for _, o := range opts {
		o(&m)
	}
	return m
}

// rawMethod is the row of a HandlerFunc: its params reach it as sent. For
// a method with an exemption the row decodes that one member (leniently,
// as encoding/json would into the handler's struct) so the server can
// tell an exempt call.
func rawMethod(info contracts.MethodInfo, h HandlerFunc) Method {
	m := Method{serve: func(ctx context.Context, req *Request, _ any) (any, error) { return h(ctx, req) }}
	if info.Exempt == nil {
		m.decode = func(json.RawMessage) (any, error) { return nil, nil }
		return m
	}
	t := reflect.StructOf([]reflect.StructField{{
		Name: "V",
		Type: reflect.TypeFor[string](),
		Tag:  reflect.StructTag(`json:"` + info.Exempt.Field + `"`),
	}})
	m.ptype = reflect.PointerTo(t)
	m.decode = func(raw json.RawMessage) (any, error) {
		v := reflect.New(t)
		if len(raw) == 0 {
			return nil, nil
		}
		if err := json.Unmarshal(raw, v.Interface()); err != nil {
			return nil, err
		}
		return v.Interface(), nil
	}
	return m
}

// bindExemption finds the member of the row's params that exempts a call
// (info.Exempt), by its JSON name as encoding/json matches it. A
// terminal-only method with an exemption whose params have no such string
// member is a programming error: it panics at registration.
func (m *Method) bindExemption(info contracts.MethodInfo) {
	if info.Exempt == nil {
		return
	}
	if m.ptype == nil {
		panic("rpc: method " + info.Name + " has an exemption but its row decodes no params")
	}
	t := m.ptype.Elem()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		if name == info.Exempt.Field && f.Type.Kind() == reflect.String {
			m.exempt, m.exemptValue = f.Index, info.Exempt.Value
			return
		}
	}
	panic(fmt.Sprintf("rpc: the params of %s (%s) have no string member %q for its exemption", info.Name, t, info.Exempt.Field))
}

// isExempt reports whether decoded params carry the row's exemption value.
func (m *Method) isExempt(params any) bool {
	if m.exempt == nil || params == nil {
		return false
	}
	v := reflect.ValueOf(params)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return false
	}
	return v.Elem().FieldByIndex(m.exempt).String() == m.exemptValue
}

// decodeError is the answer to params a strict row could not decode.
func (m *Method) decodeError(err error) error {
	if m.secret == "" {
		return err
	}
	// Never echo the params: they hold secrets.
	return contracts.Errorf(contracts.ErrInvalidArgument, contracts.ReasonInvalidParams, "%s", m.secret)
}

// Decoded is the request's params as its method's row decoded them (a *P
// for a typed row), or nil. The owner check reads the passphrase from it.
func (r *Request) Decoded() any { return r.decoded }

// Decode decodes req.Params with the row, as the server does before the
// terminal checks, and keeps the value on req (Decoded). A raw row keeps
// nothing and never fails. Tests of an owner check use it to build the
// request the check sees.
func (m Method) Decode(req *Request) error {
	params, err := m.decode(req.Params)
	if err != nil {
		if !m.strict {
			return nil
		}
		return m.decodeError(err)
	}
	req.decoded = params
	return nil
}

// Serve runs the row's check and handler on the params Decode kept.
func (m Method) Serve(ctx context.Context, req *Request) (any, error) {
	return m.serve(ctx, req, req.decoded)
}
