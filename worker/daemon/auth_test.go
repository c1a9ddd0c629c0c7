package daemon

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/gate"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
	"github.com/kcleanup/kcleanup/worker/httpauth"
)

// The HTTP API acts for a caller (?pinFor= appends a PINNED record with the
// worker's Kafka credentials) only for a caller it can name. These tests use
// real HTTP clients: a bearer token over plain HTTP, client certificates over
// TLS, and none.

const aliceToken = "alice-0123456789abcdef"

func authed(t *testing.T, cfg httpauth.Config) *httpauth.Authenticator {
	t.Helper()
	a, err := httpauth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// send is do with a client and headers of the test's choosing.
func send(t *testing.T, client *http.Client, method, url, body string, header ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("401 without a WWW-Authenticate challenge: %s", b)
	}
	return answer{resp.StatusCode, string(b)}
}

func TestPinForIsRefusedWhenTheWorkerAuthenticatesNobody(t *testing.T) {
	f := newAppliedFixture(t)
	a := do(t, "POST", f.validate+"?pinFor=30m", marker("action-state", f.id, events.Offsets{0: 160, 1: 130}))
	if a.code != http.StatusForbidden || !strings.Contains(a.body, "--http-token-file") {
		t.Fatalf("want 403 naming the flags, got %d %s", a.code, a.body)
	}
	// Nothing was written: no pin in the projection.
	if st := do(t, "GET", f.url+"/v1/status?all=true", ""); strings.Contains(st.body, `"pinId"`) {
		t.Fatalf("a refused request pinned something:\n%s", st.body)
	}
	// Validation without a pin stays open: it only reads.
	if v := do(t, "POST", f.validate, marker("action-state", f.id, events.Offsets{0: 160, 1: 130})); v.code != 200 {
		t.Fatalf("validate without a pin: %d %s", v.code, v.body)
	}
}

func TestPinForWithABearerToken(t *testing.T) {
	dir := t.TempDir()
	tokens := writeFile(t, dir, "tokens.csv", "# callers of the gate\n"+aliceToken+",alice,1001\n")
	f := newAppliedFixture(t, WithHTTPAuth(authed(t, httpauth.Config{TokenFile: tokens})))
	body := marker("action-state", f.id, events.Offsets{0: 160, 1: 130})
	c := http.DefaultClient

	if a := send(t, c, "POST", f.validate+"?pinFor=30m", body); a.code != 401 {
		t.Fatalf("no token: want 401, got %d %s", a.code, a.body)
	}
	if a := send(t, c, "POST", f.validate+"?pinFor=30m", body, "Authorization", "Bearer not-a-token-of-the-file"); a.code != 401 {
		t.Fatalf("wrong token: want 401, got %d %s", a.code, a.body)
	}
	if a := send(t, c, "POST", f.validate+"?pinFor=30m", body, "Authorization", "Basic "+aliceToken); a.code != 401 {
		t.Fatalf("not a bearer token: want 401, got %d %s", a.code, a.body)
	}
	a := send(t, c, "POST", f.validate+"?pinFor=30m", body, "Authorization", "Bearer "+aliceToken)
	var v gate.Verdict
	a.decode(t, &v)
	if a.code != 200 || v.PinID == "" {
		t.Fatalf("alice's token: %d %s", a.code, a.body)
	}
	// The pin names who asked.
	kafkatest.Eventually(t, 20*time.Second, "the pin, with its caller, in /v1/status", func() bool {
		st := do(t, "GET", f.url+"/v1/status?all=true", "").body
		return strings.Contains(st, v.PinID) && strings.Contains(st, "for token:alice")
	})
	// Revoked: the file is read again when it changes.
	time.Sleep(1100 * time.Millisecond)
	writeFile(t, dir, "tokens.csv", "bob-0123456789abcdef0,bob\n")
	kafkatest.Eventually(t, 10*time.Second, "alice's token revoked", func() bool {
		return send(t, c, "POST", f.validate+"?pinFor=30m", body, "Authorization", "Bearer "+aliceToken).code == 401
	})
	// A file that no longer parses keeps the last good set.
	time.Sleep(1100 * time.Millisecond)
	writeFile(t, dir, "tokens.csv", "short,x\n")
	time.Sleep(1100 * time.Millisecond)
	if a := send(t, c, "POST", f.validate+"?pinFor=30m", body, "Authorization", "Bearer bob-0123456789abcdef0"); a.code != 200 {
		t.Fatalf("bob after a broken update: %d %s", a.code, a.body)
	}
}

func TestPinForWithClientCertificates(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "kcleanup test CA")
	other := newTestCA(t, "someone else's CA")
	writeFile(t, dir, "ca.pem", string(ca.certPEM))
	certPEM, keyPEM := ca.issue(t, "worker", true)
	writeFile(t, dir, "server.pem", string(certPEM))
	writeFile(t, dir, "server-key.pem", string(keyPEM))
	auth := authed(t, httpauth.Config{CertFile: filepath.Join(dir, "server.pem"), KeyFile: filepath.Join(dir, "server-key.pem"),
		ClientCAFile: filepath.Join(dir, "ca.pem")})
	f := newAppliedFixture(t, WithHTTPAuth(auth))
	tlsConfig, err := auth.ServerTLS()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(f.r.d.Handler())
	srv.TLS = tlsConfig
	srv.StartTLS()
	t.Cleanup(srv.Close)
	url := srv.URL + "/v1/validate?pinFor=30m"
	body := marker("action-state", f.id, events.Offsets{0: 160, 1: 130})

	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	client := func(cert *tls.Certificate) *http.Client {
		tc := &tls.Config{RootCAs: roots, ServerName: "localhost"}
		if cert != nil {
			tc.Certificates = []tls.Certificate{*cert}
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
	}
	if a := send(t, client(nil), "POST", url, body); a.code != 401 {
		t.Fatalf("no client certificate: want 401, got %d %s", a.code, a.body)
	}
	// Reads stay open without a certificate.
	if a := send(t, client(nil), "GET", srv.URL+"/v1/status", ""); a.code != 200 {
		t.Fatalf("status without a certificate: %d %s", a.code, a.body)
	}
	// A certificate of another CA fails the handshake.
	oc, ok := other.issue(t, "mallory", false)
	mallory, err := tls.X509KeyPair(oc, ok)
	if err != nil {
		t.Fatal(err)
	}
	// Go's client withholds a certificate the server's CA list does not
	// name (so the request is anonymous: 401); one that sends it anyway
	// fails the handshake.
	if a := send(t, client(&mallory), "POST", url, body); a.code != 401 {
		t.Fatalf("a certificate of another CA: want 401, got %d %s", a.code, a.body)
	}
	pushy := client(nil)
	pushy.Transport.(*http.Transport).TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return &mallory, nil
	}
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	if resp, err := pushy.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a certificate of another CA was accepted: %d", resp.StatusCode)
	}
	ac, ak := ca.issue(t, "alice", false)
	alice, err := tls.X509KeyPair(ac, ak)
	if err != nil {
		t.Fatal(err)
	}
	a := send(t, client(&alice), "POST", url, body)
	var v gate.Verdict
	a.decode(t, &v)
	if a.code != 200 || v.PinID == "" {
		t.Fatalf("alice's certificate: %d %s", a.code, a.body)
	}
	kafkatest.Eventually(t, 20*time.Second, "the pin, with its caller, in /v1/status", func() bool {
		st := send(t, client(&alice), "GET", srv.URL+"/v1/status?all=true", "").body
		return strings.Contains(st, v.PinID) && strings.Contains(st, "for mtls:alice")
	})
}

func TestProtectReads(t *testing.T) {
	tokens := writeFile(t, t.TempDir(), "tokens.csv", aliceToken+",alice\n")
	f := newAppliedFixture(t, WithHTTPAuth(authed(t, httpauth.Config{TokenFile: tokens, ProtectReads: true})))
	c := http.DefaultClient
	for _, path := range []string{"/v1/status", "/metrics"} {
		if a := send(t, c, "GET", f.url+path, ""); a.code != 401 {
			t.Fatalf("%s without a token: want 401, got %d", path, a.code)
		}
		if a := send(t, c, "GET", f.url+path, "", "Authorization", "Bearer "+aliceToken); a.code != 200 {
			t.Fatalf("%s with a token: %d %s", path, a.code, a.body)
		}
	}
	if a := send(t, c, "POST", f.validate, marker("action-state", f.id, events.Offsets{0: 160, 1: 130})); a.code != 401 {
		t.Fatalf("validate without a token: want 401, got %d", a.code)
	}
	// Probes carry no credentials.
	for _, path := range []string{"/healthz", "/readyz"} {
		if a := send(t, c, "GET", f.url+path, ""); a.code != 200 {
			t.Fatalf("%s: %d %s", path, a.code, a.body)
		}
	}
}

// testCA is a certificate authority made for one test.
type testCA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

func newTestCA(t *testing.T, name string) testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return testCA{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue makes a server (localhost, 127.0.0.1) or client certificate named cn.
func (ca testCA) issue(t *testing.T, cn string, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}
