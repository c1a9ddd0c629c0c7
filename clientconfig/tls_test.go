package clientconfig

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

// newClient loads the config at path and builds a client for brokers with it.
func newClient(t *testing.T, brokers []string, path string) *kgo.Client {
	t.Helper()
	opts, err := optsFor(brokers, path)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func optsFor(brokers []string, path string) ([]kgo.Opt, error) {
	c, err := Load(path)
	if err != nil {
		return nil, err
	}
	opts, err := c.Opts()
	if err != nil {
		return nil, err
	}
	return append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.DialTimeout(5 * time.Second)}, opts...), nil
}

func TestOptsFromCommandConfig(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "ca")
	caFile := writeFile(t, dir, "ca.pem", ca.certPEM)
	cfg := writeFile(t, dir, "client.properties", "client.id=my-app\nsecurity.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"+
		"sasl.jaas.config="+scramJAAS+"\nssl.truststore.type=PEM\nssl.truststore.location="+caFile+"\n")
	cl := newClient(t, []string{"h:9092"}, cfg)
	if got := cl.OptValue(kgo.ClientID); got != "my-app" {
		t.Errorf("client.id %v", got)
	}
	tc := cl.OptValue(kgo.DialTLSConfig).(*tls.Config)
	if tc == nil || tc.RootCAs == nil || tc.InsecureSkipVerify || tc.MinVersion != tls.VersionTLS12 {
		t.Fatalf("TLS config %+v", tc)
	}
	mechs := cl.OptValue(kgo.SASL).([]sasl.Mechanism)
	if len(mechs) != 1 || mechs[0].Name() != "SCRAM-SHA-512" {
		t.Fatalf("SASL %v", mechs)
	}
}

func TestKgoOptsErrors(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "ca")
	leaf := ca.issue(t, "client", nil, nil)
	other := ca.issue(t, "other", nil, nil)
	p8, _ := pem.Decode([]byte(leaf.keyPEM))
	encrypted := string(pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: p8.Bytes}))
	legacy := "-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n-----END EC PRIVATE KEY-----\n"

	trust := func(content string) string {
		return "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=" + writeFile(t, dir, "trust-"+time.Now().Format("150405.000000000"), content) + "\n"
	}
	keystore := func(content string) string {
		return "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.location=" + writeFile(t, dir, "ks-"+time.Now().Format("150405.000000000"), content) + "\n"
	}
	for _, tc := range []struct {
		name, config string
		want         []string
		hint         string
	}{
		{"missing truststore file", "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=" + filepath.Join(dir, "nope.pem"),
			[]string{"client.properties:4: ssl.truststore.location", "no such file"}, ""},
		{"truststore without certificates", trust("hello\n"), []string{"client.properties:4: ssl.truststore.location: no PEM certificate found"}, ""},
		{"truststore with a key", trust(ca.certPEM + leaf.keyPEM), []string{"PEM block 2 is a PRIVATE KEY; a truststore holds only CERTIFICATE blocks"}, ""},
		{"truststore with a broken certificate", trust("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), []string{"certificate 1"}, ""},
		{"bad base64", trust("-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n"), []string{"PEM block CERTIFICATE: invalid base64"}, ""},
		{"unterminated block", trust("-----BEGIN CERTIFICATE-----\nAAAA\n"), []string{`PEM block CERTIFICATE has no "-----END CERTIFICATE-----"`}, ""},
		{"inline truststore garbage", "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.certificates=nothing here",
			[]string{"client.properties:4: ssl.truststore.certificates: no PEM certificate found"}, ""},
		{"keystore without key", keystore(leaf.certPEM), []string{"client.properties:4: ssl.keystore.location: no PEM PRIVATE KEY found"}, ""},
		{"keystore without certificate", keystore(leaf.keyPEM), []string{"no PEM CERTIFICATE found"}, ""},
		{"keystore with two keys", keystore(leaf.certPEM + leaf.keyPEM + other.keyPEM), []string{"2 private keys found; want one"}, ""},
		{"key does not match certificate", keystore(leaf.certPEM + other.keyPEM), []string{"certificate and key"}, ""},
		{"encrypted PKCS#8 key", keystore(leaf.certPEM + encrypted), []string{"private key is encrypted"}, "openssl pkey"},
		{"legacy encrypted key", keystore(leaf.certPEM + legacy), []string{"private key is encrypted"}, "openssl pkey"},
		{"inline chain and key do not match", "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.certificate.chain=" + oneLine(leaf.certPEM) + "\nssl.keystore.key=" + oneLine(other.keyPEM),
			[]string{"client.properties:4: ssl.keystore.certificate.chain and ssl.keystore.key: certificate and key"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeFile(t, dir, "client.properties", "# test\n"+tc.config)
			_, err := optsFor([]string{"h"}, cfg)
			if err == nil {
				t.Fatal("no error")
			}
			// Messages name the file by the path given; shorten it for the fragments above.
			msg := strings.ReplaceAll(err.Error(), cfg, "client.properties")
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q\ndoes not hold %q", msg, w)
				}
			}
			if hints := strings.Join(errors.GetAllHints(err), "\n"); !strings.Contains(hints, tc.hint) {
				t.Errorf("hints %q do not hold %q", hints, tc.hint)
			}
		})
	}
}

// oneLine joins PEM text as a continued properties value arrives: all on one line.
func oneLine(pemText string) string {
	return strings.Join(strings.Fields(pemText), " ")
}

// TestPEMForms: the PEM shapes operators have: SEC1 "EC PRIVATE KEY" as well as PKCS#8, openssl's
// "Bag Attributes" between blocks, Windows line ends, and a chain continued onto one line.
func TestPEMForms(t *testing.T) {
	ca := newTestCA(t, "ca")
	leaf := ca.issue(t, "client", nil, nil)
	sec1, err := x509.MarshalECPrivateKey(leaf.tls.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	sec1PEM := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}))
	bagged := "Bag Attributes\n    localKeyID: 01 02\nsubject=CN = client\n" + leaf.certPEM + "Key Attributes: <No Attributes>\n" + leaf.keyPEM
	for name, tc := range map[string]struct{ chain, key string }{
		"pkcs8":     {leaf.certPEM, leaf.keyPEM},
		"sec1":      {leaf.certPEM, sec1PEM},
		"bag attrs": {bagged, bagged},
		"crlf":      {strings.ReplaceAll(leaf.certPEM, "\n", "\r\n"), strings.ReplaceAll(leaf.keyPEM, "\n", "\r\n")},
		"one line":  {oneLine(leaf.certPEM + ca.certPEM), oneLine(leaf.keyPEM)},
	} {
		cert, err := keyPair(tc.chain, tc.key)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(cert.Certificate) == 0 || string(cert.Certificate[0]) != string(leaf.tls.Certificate[0]) {
			t.Errorf("%s: wrong leaf", name)
		}
	}
	pool, err := certPool(oneLine(ca.certPEM))
	if err != nil || pool == nil {
		t.Fatalf("one-line truststore: %v", err)
	}
}

func startKfake(t *testing.T, opts ...kfake.Opt) []string {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// TestCommandConfigAgainstKfake proves the whole path, properties file → franz-go options → TLS
// handshake and SASL exchange, against franz-go's in-process broker: each config either reaches
// the broker (a Metadata round trip) or is refused by it.
func TestCommandConfigAgainstKfake(t *testing.T) {
	const pw = "s3cret pass\"word"
	const jaasPW = `s3cret pass\\"word` // escaped for JAAS (\") and again for the properties file (\\)
	ca := newTestCA(t, "kcleanup test CA")
	server := ca.issue(t, "broker", []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	misnamed := ca.issue(t, "broker", []string{"broker.example"}, nil)
	client := ca.issue(t, "client", nil, nil)
	stranger := newTestCA(t, "some other CA")
	clientPool := x509.NewCertPool()
	clientPool.AddCert(ca.cert)

	dir := t.TempDir()
	caFile := writeFile(t, dir, "ca.pem", ca.certPEM)
	strangerFile := writeFile(t, dir, "stranger.pem", stranger.certPEM)
	clientFile := writeFile(t, dir, "client.pem", client.keyPEM+client.certPEM) // Kafka's order: key, then chain

	saslTLS := startKfake(t, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{server.tls}}), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-256", "alice", pw), kfake.Superuser("SCRAM-SHA-512", "bob", pw), kfake.Superuser("PLAIN", "carol", pw))
	mutualTLS := startKfake(t, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{server.tls},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientPool}))
	misnamedTLS := startKfake(t, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{misnamed.tls}}))
	saslPlain := startKfake(t, kfake.EnableSASL(), kfake.Superuser("PLAIN", "carol", pw))

	jaas := func(module, user, pass string) string {
		return "sasl.jaas.config=org.apache.kafka.common.security." + module + " required \\\n  username=\"" + user + "\" \\\n  password=\"" + pass + "\";\n"
	}
	trust := "ssl.truststore.type=PEM\nssl.truststore.location=" + caFile + "\n"
	for _, tc := range []struct {
		name    string
		brokers []string
		config  string
		ok      bool
	}{
		{"SASL_SSL SCRAM-SHA-256", saslTLS, "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n" + trust + jaas("scram.ScramLoginModule", "alice", jaasPW), true},
		{"SASL_SSL SCRAM-SHA-512", saslTLS, "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n" + trust + jaas("scram.ScramLoginModule", "bob", jaasPW), true},
		{"SASL_SSL PLAIN", saslTLS, "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n" + trust + jaas("plain.PlainLoginModule", "carol", jaasPW), true},
		{"SASL_SSL inline truststore", saslTLS, "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nssl.truststore.type=PEM\nssl.truststore.certificates=" +
			strings.ReplaceAll(strings.TrimSpace(ca.certPEM), "\n", " \\\n  ") + "\n" + jaas("plain.PlainLoginModule", "carol", jaasPW), true},
		{"wrong password", saslTLS, "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n" + trust + jaas("scram.ScramLoginModule", "alice", "nope"), false},
		{"wrong mechanism for the user", saslTLS, "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n" + trust + jaas("scram.ScramLoginModule", "alice", jaasPW), false},
		{"untrusted broker certificate", saslTLS, "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nssl.truststore.type=PEM\nssl.truststore.location=" + strangerFile + "\n" +
			jaas("plain.PlainLoginModule", "carol", jaasPW), false},
		{"mutual TLS, keystore file", mutualTLS, "security.protocol=SSL\n" + trust + "ssl.keystore.type=PEM\nssl.keystore.location=" + clientFile + "\n", true},
		{"mutual TLS, inline keystore", mutualTLS, "security.protocol=SSL\n" + trust + "ssl.keystore.type=PEM\nssl.keystore.certificate.chain=" +
			oneLine(client.certPEM) + "\nssl.keystore.key=" + oneLine(client.keyPEM) + "\n", true},
		{"mutual TLS without a client certificate", mutualTLS, "security.protocol=SSL\n" + trust, false},
		{"host name verified by default", misnamedTLS, "security.protocol=SSL\n" + trust, false},
		{"host name verification off", misnamedTLS, "security.protocol=SSL\n" + trust + "ssl.endpoint.identification.algorithm=\n", true},
		{"host name verification off still checks the chain", misnamedTLS, "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=" + strangerFile +
			"\nssl.endpoint.identification.algorithm=\n", false},
		{"SASL_PLAINTEXT PLAIN", saslPlain, "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n" + jaas("plain.PlainLoginModule", "carol", jaasPW), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeFile(t, t.TempDir(), "client.properties", tc.config)
			cl := newClient(t, tc.brokers, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := cl.Ping(ctx)
			if tc.ok && err != nil {
				t.Fatalf("ping failed: %v", err)
			}
			if !tc.ok && err == nil {
				t.Fatal("ping succeeded; the broker should have refused this client")
			}
		})
	}
}
