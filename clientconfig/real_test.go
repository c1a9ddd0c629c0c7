package clientconfig_test

// Real-broker tests: every listener, mechanism and store format of the development broker's
// secured side (cmd/kafkadev/server.properties.in), with stores made by the JDK's keytool.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcleanup/kcleanup/clientconfig"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }

// deadline is the --timeout a test gives a connection; failures must come long before it.
const deadline = 30 * time.Second

// metadata sends one Metadata request with the config at path and returns the error.
func metadata(t *testing.T, bootstrap, path string) error {
	t.Helper()
	c, err := clientconfig.Load(path)
	if err != nil {
		return err
	}
	opts, err := c.Opts()
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(bootstrap), kgo.DialTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	_, err = req.RequestWith(ctx, cl)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the request hung until the deadline (%s): %v", deadline, err)
	}
	return err
}

func TestSASLSSLMechanisms(t *testing.T) {
	s := kafkatest.Secure(t)
	for _, tc := range []struct{ mech, user, pw string }{
		{clientconfig.MechSCRAMSHA512, "admin", s.AdminPassword},
		{clientconfig.MechSCRAMSHA256, "admin", s.AdminPassword},
		{clientconfig.MechPlain, "admin", s.AdminPassword},
		{clientconfig.MechPlain, "plain-user", s.PlainPassword},
	} {
		t.Run(tc.mech+" "+tc.user, func(t *testing.T) {
			if err := metadata(t, s.SASLSSL, s.SCRAMConfig(t, tc.mech, tc.user, tc.pw)); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("the admin file kafka.sh writes", func(t *testing.T) {
		if err := metadata(t, s.SASLSSL, s.AdminFile); err != nil {
			t.Fatal(err)
		}
	})
}

// TestConnectionFailuresAreClear: each way of getting security wrong fails at once with an
// error that says what is wrong, never by waiting for the deadline.
func TestConnectionFailuresAreClear(t *testing.T) {
	s := kafkatest.Secure(t)
	stranger := writePEM(t, "stranger.pem", "CERTIFICATE", newCA(t).Raw)
	localhost := strings.Replace(s.SASLSSL, "127.0.0.1", "localhost", 1)
	expired := writePEM(t, "expired-ca.pem", "CERTIFICATE", expiredCopyOfCA(t, s))
	for _, tc := range []struct {
		name      string
		bootstrap string
		config    string
		want      string
	}{
		{"wrong password", s.SASLSSL, s.SCRAMConfig(t, clientconfig.MechSCRAMSHA512, "admin", "not-the-password"), "SASL_AUTHENTICATION_FAILED"},
		{"unknown user", s.SASLSSL, s.SCRAMConfig(t, clientconfig.MechSCRAMSHA256, "nobody", "x"), "SASL_AUTHENTICATION_FAILED"},
		{"PLAIN user with SCRAM", s.SASLSSL, s.SCRAMConfig(t, clientconfig.MechSCRAMSHA512, "plain-user", s.PlainPassword), "SASL_AUTHENTICATION_FAILED"},
		{"unknown CA", s.SASLSSL, kafkatest.WriteConfig(t, "security.protocol=SASL_SSL", "sasl.mechanism=PLAIN",
			`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="`+s.AdminPassword+`";`,
			"ssl.truststore.type=PEM", "ssl.truststore.location="+stranger), "certificate signed by unknown authority"},
		{"expired CA", s.SASLSSL, kafkatest.WriteConfig(t, "security.protocol=SASL_SSL", "sasl.mechanism=PLAIN",
			`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="`+s.AdminPassword+`";`,
			"ssl.truststore.type=PEM", "ssl.truststore.location="+expired), "expired"},
		{"host name mismatch", localhost, s.SCRAMConfig(t, clientconfig.MechSCRAMSHA512, "admin", s.AdminPassword), "wanted to match localhost"},
		{"mutual TLS without a client certificate", s.MTLS, kafkatest.WriteConfig(t, "security.protocol=SSL", "ssl.truststore.type=PEM",
			"ssl.truststore.location="+s.CAFile), "certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := metadata(t, tc.bootstrap, tc.config)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one that holds %q", err, tc.want)
			}
		})
	}
	t.Run("host name check off: the mismatch is accepted, the chain still checked", func(t *testing.T) {
		if err := metadata(t, localhost, s.SCRAMConfig(t, clientconfig.MechSCRAMSHA512, "admin", s.AdminPassword, "ssl.endpoint.identification.algorithm=")); err != nil {
			t.Fatal(err)
		}
		err := metadata(t, localhost, kafkatest.WriteConfig(t, "security.protocol=SSL", "ssl.endpoint.identification.algorithm=",
			"ssl.truststore.type=PEM", "ssl.truststore.location="+stranger))
		if err == nil || !strings.Contains(err.Error(), "unknown authority") {
			t.Fatalf("error %v", err)
		}
	})
}

// TestStoresMadeByKeytool: JKS and PKCS12 truststores and keystores as an operator's keytool
// makes them, against the SASL_SSL listener and the mutual-TLS listener.
func TestStoresMadeByKeytool(t *testing.T) {
	s := kafkatest.Secure(t)
	keytool := keytoolPath(t)
	dir := t.TempDir()
	const pw = "changeit"
	trustJKS := filepath.Join(dir, "trust.jks")
	trustP12 := filepath.Join(dir, "trust.p12")
	for store, typ := range map[string]string{trustJKS: "JKS", trustP12: "PKCS12"} {
		run(t, keytool, "-importcert", "-noprompt", "-alias", "ca", "-file", s.CAFile, "-keystore", store, "-storetype", typ, "-storepass", pw)
	}
	sasl := func(extra ...string) string {
		return kafkatest.WriteConfig(t, append([]string{"security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-512",
			`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="` + s.AdminPassword + `";`}, extra...)...)
	}
	for _, tc := range []struct {
		name   string
		config string
		want   string // "" for success
	}{
		{"JKS truststore", sasl("ssl.truststore.type=JKS", "ssl.truststore.location="+trustJKS, "ssl.truststore.password="+pw), ""},
		{"PKCS12 truststore", sasl("ssl.truststore.type=PKCS12", "ssl.truststore.location="+trustP12, "ssl.truststore.password="+pw), ""},
		{"no type: Kafka's default JKS, a PKCS12 file read as Java does", sasl("ssl.truststore.location="+trustP12, "ssl.truststore.password="+pw), ""},
		{"JKS truststore, wrong password", sasl("ssl.truststore.location="+trustJKS, "ssl.truststore.password=wrong"), "wrong password?"},
		{"PKCS12 truststore, wrong password", sasl("ssl.truststore.type=PKCS12", "ssl.truststore.location="+trustP12, "ssl.truststore.password=wrong"), "wrong password?"},
		{"JKS truststore without password", sasl("ssl.truststore.location=" + trustJKS), "needs its password"},
		{"PEM file declared JKS", sasl("ssl.truststore.location="+s.CAFile, "ssl.truststore.password="+pw), "the file is PEM text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := metadata(t, s.SASLSSL, tc.config)
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}

	// Keystores: a key pair made by keytool, its certificate signed by the broker's CA.
	caCert, caKey := loadCA(t, s)
	keystore := func(name, typ, storePW, keyPW string) string {
		store := filepath.Join(dir, name)
		args := []string{"-keystore", store, "-storetype", typ, "-storepass", storePW}
		run(t, keytool, append([]string{"-genkeypair", "-alias", "client", "-keyalg", "EC", "-groupname", "secp256r1",
			"-dname", "CN=" + strings.TrimSuffix(name, filepath.Ext(name)), "-validity", "2", "-keypass", keyPW}, args...)...)
		csr := run(t, keytool, append([]string{"-certreq", "-alias", "client", "-keypass", keyPW}, args...)...)
		signed := writePEM(t, name+".crt", "CERTIFICATE", signCSR(t, csr, caCert, caKey))
		run(t, keytool, append([]string{"-importcert", "-noprompt", "-trustcacerts", "-alias", "ca", "-file", s.CAFile}, args...)...)
		run(t, keytool, append([]string{"-importcert", "-noprompt", "-alias", "client", "-file", signed, "-keypass", keyPW}, args...)...)
		return store
	}
	p12 := keystore("client-p12.p12", "PKCS12", pw, pw)
	jks := keystore("client-jks.jks", "JKS", pw, "keypass-differs")
	mtls := func(extra ...string) string {
		return kafkatest.WriteConfig(t, append([]string{"security.protocol=SSL", "ssl.truststore.type=PEM", "ssl.truststore.location=" + s.CAFile}, extra...)...)
	}
	for _, tc := range []struct {
		name   string
		config string
		want   string
	}{
		{"PKCS12 keystore", mtls("ssl.keystore.type=PKCS12", "ssl.keystore.location="+p12, "ssl.keystore.password="+pw), ""},
		{"JKS keystore with its own key password", mtls("ssl.keystore.type=JKS", "ssl.keystore.location="+jks, "ssl.keystore.password="+pw,
			"ssl.key.password=keypass-differs"), ""},
		{"JKS keystore, key password missing", mtls("ssl.keystore.location="+jks, "ssl.keystore.password="+pw), "ssl.key.password"},
		{"PKCS12 keystore, wrong password", mtls("ssl.keystore.type=PKCS12", "ssl.keystore.location="+p12, "ssl.keystore.password=nope"), "wrong password?"},
		{"JKS truststore and PKCS12 keystore together", kafkatest.WriteConfig(t, "security.protocol=SSL", "ssl.truststore.location="+trustJKS,
			"ssl.truststore.password="+pw, "ssl.keystore.type=PKCS12", "ssl.keystore.location="+p12, "ssl.keystore.password="+pw), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := metadata(t, s.MTLS, tc.config)
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error()+strings.Join(errors.GetAllHints(err), " "), tc.want)):
				t.Fatalf("error %v (hints %v), want %q", err, errors.GetAllHints(err), tc.want)
			}
		})
	}
}

func keytoolPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("keytool")
	if err != nil && os.Getenv("JAVA_HOME") != "" {
		p, err = exec.LookPath(filepath.Join(os.Getenv("JAVA_HOME"), "bin", "keytool"))
	}
	if err != nil {
		t.Fatalf("keytool (the JDK's) is needed to make the stores: %v", err)
	}
	return p
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

func writePEM(t *testing.T, name, typ string, der []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func newCA(t *testing.T) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "a stranger's CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c
}

func loadCA(t *testing.T, s kafkatest.SecureBroker) (*x509.Certificate, any) {
	t.Helper()
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := pem.Decode(b)
		if blk == nil {
			t.Fatalf("%s: no PEM", p)
		}
		return blk.Bytes
	}
	cert, err := x509.ParseCertificate(read(s.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	key, err := x509.ParsePKCS8PrivateKey(read(s.CAKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// signCSR signs keytool's certificate request (PEM text) with the CA, for client use.
func signCSR(t *testing.T, csrPEM string, ca *x509.Certificate, caKey any) []byte {
	t.Helper()
	blk, _ := pem.Decode([]byte(csrPEM))
	if blk == nil {
		t.Fatalf("keytool -certreq printed no PEM:\n%s", csrPEM)
	}
	csr, err := x509.ParseCertificateRequest(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: csr.Subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, csr.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// expiredCopyOfCA is the broker's CA certificate re-issued (same subject and key, so it still
// signs the broker's certificate) with a validity that ended yesterday: a truststore holding an
// expired CA.
func expiredCopyOfCA(t *testing.T, s kafkatest.SecureBroker) []byte {
	t.Helper()
	ca, key := loadCA(t, s)
	tmpl := *ca
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour)
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, &tmpl, ca.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}
