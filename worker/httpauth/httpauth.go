// Package httpauth says who is calling a worker's HTTP API.
//
// A worker acts for its callers with its own credentials: POST
// /v1/validate?pinFor= appends a PINNED record (which blocks every cleanup
// above it), and a request naming a checkpoint makes it read files or buckets.
// Such requests need a caller it can name. Two ways are offered, the ones
// Kubernetes components and Prometheus use:
//
//   - mutual TLS: the worker serves HTTPS (--http-tls-cert-file, --http-tls-key-file)
//     and verifies client certificates against --http-client-ca-file; the caller is
//     the certificate's subject common name;
//   - bearer tokens: --http-token-file in the Kubernetes static token file format
//     (one "token,user[,uid[,groups]]" line each, # comments); the caller is the user.
//
// The read-only endpoints (status, validation without a pin, the console,
// metrics) stay open unless the operator protects them; /healthz and /readyz
// are always open (probes carry no credentials).
package httpauth

import (
	"bytes"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/csv"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
)

// Config is what the operator set. The zero value authenticates nobody.
type Config struct {
	// TokenFile is the static token file (--http-token-file); "" for none.
	TokenFile string
	// CertFile and KeyFile are the server's certificate and key (HTTPS); both or neither.
	CertFile, KeyFile string
	// ClientCAFile verifies client certificates (mutual TLS); needs CertFile.
	ClientCAFile string
	// ProtectReads makes the read-only endpoints need a caller too.
	ProtectReads bool
}

// Enabled reports whether any caller can be authenticated.
func (c Config) Enabled() bool { return c.TokenFile != "" || c.ClientCAFile != "" }

// Check says what is wrong with a combination of settings, before anything is served.
func (c Config) Check() error {
	if (c.CertFile == "") != (c.KeyFile == "") {
		return errors.WithHint(errors.New("--http-tls-cert-file and --http-tls-key-file go together"),
			"give both to serve HTTPS, or neither")
	}
	if c.ClientCAFile != "" && c.CertFile == "" {
		return errors.WithHint(errors.New("--http-client-ca-file needs HTTPS"),
			"give --http-tls-cert-file and --http-tls-key-file too: client certificates travel only over TLS")
	}
	if c.ProtectReads && !c.Enabled() {
		return errors.WithHint(errors.New("--http-protect-reads needs a way to authenticate callers"),
			"give --http-token-file or --http-client-ca-file (with --http-tls-cert-file and --http-tls-key-file)")
	}
	return nil
}

// Caller is an authenticated caller.
type Caller struct {
	// Name is the token's user or the client certificate's common name.
	Name string
	// Via is "token" or "mtls".
	Via string
}

// ErrNoCredentials is returned when a request carries no credentials at all.
var ErrNoCredentials = errors.New("the request carries no credentials")

// ErrNotConfigured is returned when the worker authenticates nobody.
var ErrNotConfigured = errors.New("this worker authenticates no caller")

// Authenticator names callers. It is safe for concurrent use.
type Authenticator struct {
	cfg    Config
	tokens *tokenFile
}

// New checks cfg and reads the token file once, so that a bad file stops the
// worker at start rather than refusing every caller later.
func New(cfg Config) (*Authenticator, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	a := &Authenticator{cfg: cfg}
	if cfg.TokenFile != "" {
		a.tokens = &tokenFile{path: cfg.TokenFile}
		if err := a.tokens.load(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// Config returns the settings it was made with.
func (a *Authenticator) Config() Config {
	if a == nil {
		return Config{}
	}
	return a.cfg
}

// Caller names the caller of r. A verified client certificate is taken
// first; then an Authorization: Bearer token. Errors: ErrNotConfigured,
// ErrNoCredentials, or one that says why the credentials were not accepted.
func (a *Authenticator) Caller(r *http.Request) (Caller, error) {
	if a == nil || !a.cfg.Enabled() {
		return Caller{}, ErrNotConfigured
	}
	if a.cfg.ClientCAFile != "" && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		cn := r.TLS.VerifiedChains[0][0].Subject.CommonName
		if cn == "" {
			return Caller{}, errors.New("the client certificate has no subject common name to name its holder by")
		}
		return Caller{Name: cn, Via: "mtls"}, nil
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return Caller{}, ErrNoCredentials
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return Caller{}, errors.New("the Authorization header is not \"Bearer <token>\"")
	}
	if a.tokens == nil {
		return Caller{}, errors.New("this worker takes no bearer tokens (no --http-token-file); present a client certificate")
	}
	user, ok := a.tokens.lookup(strings.TrimSpace(token))
	if !ok {
		return Caller{}, errors.New("the bearer token is not in the worker's token file")
	}
	return Caller{Name: user, Via: "token"}, nil
}

// ServerTLS is the TLS configuration of the HTTP server, or nil when it
// serves plain HTTP. The certificate and key are read again when either
// file changes (a rotated Kubernetes secret), checked at most once a second.
// Client certificates are verified when given, not required: the read-only
// endpoints stay reachable without one unless ProtectReads.
func (a *Authenticator) ServerTLS() (*tls.Config, error) {
	if a == nil || a.cfg.CertFile == "" {
		return nil, nil
	}
	kp := &keyPair{cert: a.cfg.CertFile, key: a.cfg.KeyFile}
	if _, err := kp.get(); err != nil {
		return nil, err
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return kp.get() }}
	if a.cfg.ClientCAFile != "" {
		pem, err := os.ReadFile(a.cfg.ClientCAFile)
		if err != nil {
			return nil, errors.WithHint(errors.Wrap(err, "read --http-client-ca-file"), "name the PEM file of the CA that signs the callers' certificates")
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.WithHintf(errors.Newf("--http-client-ca-file %s holds no PEM certificate", a.cfg.ClientCAFile),
				"give the CA certificate in PEM (-----BEGIN CERTIFICATE-----)")
		}
		c.ClientCAs = pool
		c.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return c, nil
}

// keyPair is the server's certificate, read again when its files change.
type keyPair struct {
	cert, key string
	mu        sync.Mutex
	checked   time.Time
	stamp     string
	pair      *tls.Certificate
}

func (k *keyPair) get() (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.pair != nil && time.Since(k.checked) < time.Second {
		return k.pair, nil
	}
	k.checked = time.Now()
	stamp, err := fileStamp(k.cert, k.key)
	if err != nil {
		if k.pair != nil {
			return k.pair, nil // a rotation in progress: keep serving the last good pair
		}
		return nil, errors.WithHint(errors.Wrap(err, "read the HTTP server's certificate"), "check --http-tls-cert-file and --http-tls-key-file")
	}
	if k.pair != nil && stamp == k.stamp {
		return k.pair, nil
	}
	pair, err := tls.LoadX509KeyPair(k.cert, k.key)
	if err != nil {
		if k.pair != nil {
			return k.pair, nil
		}
		return nil, errors.WithHint(errors.Wrap(err, "load --http-tls-cert-file and --http-tls-key-file"),
			"give a PEM certificate (chain) and its PEM private key")
	}
	k.pair, k.stamp = &pair, stamp
	return k.pair, nil
}

// fileStamp identifies the current contents of files by size and modification time.
func fileStamp(paths ...string) (string, error) {
	var b strings.Builder
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return "", err
		}
		b.WriteString(p + "|" + st.ModTime().String() + "|" + strconv.FormatInt(st.Size(), 10) + ";")
	}
	return b.String(), nil
}

// tokenFile is the static token file, read again when it changes (checked at
// most once a second), so that a token is revoked without a restart.
type tokenFile struct {
	path    string
	mu      sync.Mutex
	checked time.Time
	stamp   string
	tokens  map[string]string // token → user
}

func (t *tokenFile) lookup(token string) (string, bool) {
	t.mu.Lock()
	if time.Since(t.checked) >= time.Second {
		t.checked = time.Now()
		if stamp, err := fileStamp(t.path); err == nil && stamp != t.stamp {
			// A file that no longer parses keeps the last good set: a half-written
			// update must not open the worker to everyone or lock everyone out.
			_ = t.loadLocked()
		}
	}
	tokens := t.tokens
	t.mu.Unlock()
	user := ""
	found := false
	// Compare with every token in constant time, so that timing says nothing about them.
	for tok, u := range tokens {
		if subtle.ConstantTimeCompare([]byte(tok), []byte(token)) == 1 {
			user, found = u, true
		}
	}
	return user, found
}

func (t *tokenFile) load() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.loadLocked()
}

func (t *tokenFile) loadLocked() error {
	stamp, err := fileStamp(t.path)
	if err != nil {
		return errors.WithHint(errors.Wrap(err, "read --http-token-file"), "name a file of \"token,user\" lines (the Kubernetes static token file format)")
	}
	data, err := os.ReadFile(t.path)
	if err != nil {
		return errors.WithHint(errors.Wrap(err, "read --http-token-file"), "name a file of \"token,user\" lines (the Kubernetes static token file format)")
	}
	tokens, err := ParseTokens(data)
	if err != nil {
		return errors.Wrapf(err, "--http-token-file %s", t.path)
	}
	t.tokens, t.stamp = tokens, stamp
	return nil
}

// ParseTokens reads a static token file: CSV lines "token,user[,uid[,groups]]"
// (Kubernetes' format; uid and groups are accepted and ignored), blank lines
// and lines starting with # skipped. Tokens must be unique, at least 16
// characters and without spaces; every user must be named.
func ParseTokens(data []byte) (map[string]string, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.Comment = '#'
	r.TrimLeadingSpace = true
	tokens := map[string]string{}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, errors.WithHint(errors.Wrap(err, "parse the token file"), "write one \"token,user\" line per caller")
		}
		line, _ := r.FieldPos(0)
		if len(rec) < 2 {
			return nil, errors.WithHintf(errors.Newf("line %d has %d field(s), not \"token,user\"", line, len(rec)), "write one \"token,user\" line per caller")
		}
		tok, user := strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1])
		switch {
		case len(tok) < 16:
			return nil, errors.WithHintf(errors.Newf("line %d: the token is shorter than 16 characters", line), "generate one with: head -c 32 /dev/urandom | base64")
		case strings.ContainsAny(tok, " \t"):
			return nil, errors.Newf("line %d: the token contains whitespace", line)
		case user == "":
			return nil, errors.WithHintf(errors.Newf("line %d names no user", line), "the user is what the audit trail records for the caller")
		}
		if _, dup := tokens[tok]; dup {
			return nil, errors.Newf("line %d repeats a token of an earlier line", line)
		}
		tokens[tok] = user
	}
	if len(tokens) == 0 {
		return nil, errors.WithHint(errors.New("the token file names no token"), "write one \"token,user\" line per caller")
	}
	return tokens, nil
}
