package main

// The read-only auditor principal of docs/deploy.md, over SASL_SSL on the real broker with
// StandardAuthorizer and allow.everyone.if.no.acl.found=false.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcleanup/kcleanup/clientconfig"
	"github.com/kcleanup/kcleanup/events"
	"github.com/kcleanup/kcleanup/internal/kafkatest"
)

// auditorACLs is the auditor table of docs/deploy.md: read the control topic and describe
// both topics (the gate reads the data topic's metadata and offsets; doctor reads configs), and
// read the data topic (doctor's tombstone scan).
func auditorACLs(principal, data, control string) []kafkatest.ACL {
	topic := kmsg.ACLResourceTypeTopic
	return []kafkatest.ACL{
		{Principal: principal, Resource: topic, Name: control, Operation: kmsg.ACLOperationDescribe},
		{Principal: principal, Resource: topic, Name: control, Operation: kmsg.ACLOperationRead},
		{Principal: principal, Resource: topic, Name: control, Operation: kmsg.ACLOperationDescribeConfigs},
		{Principal: principal, Resource: topic, Name: data, Operation: kmsg.ACLOperationDescribe},
		{Principal: principal, Resource: topic, Name: data, Operation: kmsg.ACLOperationDescribeConfigs},
		{Principal: principal, Resource: topic, Name: data, Operation: kmsg.ACLOperationRead},
	}
}

// auditorEnv is the seed example (C1 applied) and an auditor user with the given ACLs.
type auditorEnv struct {
	*readEnv
	s         kafkatest.SecureBroker
	principal string
	config    string
}

func newAuditorEnv(t *testing.T, acls func(principal, data, control string) []kafkatest.ACL) *auditorEnv {
	t.Helper()
	e := &auditorEnv{readEnv: newReadEnv(t, true), s: kafkatest.Secure(t)}
	user, pw := e.s.NewUser(t, e.cl, "kcleanup-auditor")
	e.principal = "User:" + user
	kafkatest.Grant(t, e.cl, acls(e.principal, e.topic, e.control)...)
	e.config = e.s.SCRAMConfig(t, clientconfig.MechSCRAMSHA512, user, pw)
	return e
}

// runAs runs kcleanup as the auditor over SASL_SSL.
func (e *auditorEnv) runAs(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLI(t, append([]string{"-b", e.s.SASLSSL, "--command-config", e.config, "--timeout", "30s"}, args...)...)
}

func TestAuditorReadsEverythingAndWritesNothing(t *testing.T) {
	e := newAuditorEnv(t, auditorACLs)
	c0 := e.markers(t, "c0.json", events.Offsets{0: 100, 1: 90})
	c1 := e.markers(t, "c1.json", events.Offsets{0: 150, 1: 120})
	for _, tc := range []struct {
		name string
		args []string
		want int
		out  string // a fragment of stdout
	}{
		{"status", []string{"status", "--topic", e.topic}, exitOK, e.plan.PlanID},
		{"history", []string{"history", "--topic", e.topic}, exitOK, "COMMITTED"},
		{"validate allows C1", []string{"validate", "--markers", c1}, exitOK, ""},
		{"validate refuses C0", []string{"validate", "--markers", c0}, exitRefused, ""},
		{"doctor", []string{"doctor", "--topic", e.topic}, exitOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := e.runAs(t, tc.args...)
			wantExit(t, code, tc.want, stdout, stderr)
			if !strings.Contains(stdout, tc.out) {
				t.Errorf("stdout lacks %q:\n%s", tc.out, stdout)
			}
			if strings.Contains(stdout+stderr, "AUTHORIZATION_FAILED") || strings.Contains(stdout+stderr, "not authorized") {
				t.Errorf("an authorization failure with the documented auditor ACLs:\n%s\n%s", stdout, stderr)
			}
		})
	}
	t.Run("apply fails before writing anything", func(t *testing.T) {
		_, path := opTestPlan(t, e.dir, "C2", e.topic, e.topicID, events.Offsets{0: 170, 1: 130})
		ops := &opEnv{bootstrap: e.bootstrap, cl: e.cl, adm: kafkatest.Admin(t, e.cl)}
		before := ops.snapshot(t, e.topic, e.control)
		code, stdout, stderr := e.runAs(t, "apply", path)
		if code == exitOK {
			t.Fatalf("apply by the auditor succeeded:\n%s", stdout)
		}
		for _, want := range []string{"grant Write on topic " + e.control + " to " + e.principal, "grant Delete on topic " + e.topic + " to " + e.principal,
			"kafka-acls --bootstrap-server " + e.s.SASLSSL} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr)
			}
		}
		ops.assertUnchanged(t, e.topic, e.control, before)
	})
}

// TestAuditorWithoutEachACL: without any one of the auditor's ACLs the gate never allows (exit
// 4, cannot tell, or 3), and every failure names the missing grant.
func TestAuditorWithoutEachACL(t *testing.T) {
	// Describe on the control topic is implied by Read (Kafka), so removing it changes nothing;
	// on the data topic it is dropped with Read (doctor's tombstone scan), which implies it.
	for i, name := range map[int]string{1: "Read on the control topic", 2: "DescribeConfigs on the control topic",
		3: "Describe (and Read) on the data topic", 4: "DescribeConfigs on the data topic", 5: "Read on the data topic"} {
		t.Run(name, func(t *testing.T) {
			var dropped kafkatest.ACL
			e := newAuditorEnv(t, func(p, data, control string) []kafkatest.ACL {
				all := auditorACLs(p, data, control)
				dropped = all[i]
				var kept []kafkatest.ACL
				for j, a := range all {
					if j != i && !(i == 3 && j == 5) {
						kept = append(kept, a)
					}
				}
				return kept
			})
			c1 := e.markers(t, "c1.json", events.Offsets{0: 150, 1: 120})
			code, stdout, stderr := e.runAs(t, "validate", "--markers", c1)
			t.Logf("validate: exit %d\n%s%s", code, stdout, stderr)
			if code == exitOK {
				// Allowed is right only when the missing ACL is one the gate does not need.
				if dropped.Operation != kmsg.ACLOperationDescribeConfigs && (dropped.Operation != kmsg.ACLOperationRead || dropped.Name != e.topic) {
					t.Fatalf("validate allowed without %s", name)
				}
			} else if code != exitCannotTell {
				t.Errorf("validate exit %d, want %d (cannot tell)", code, exitCannotTell)
			}
			code, stdout, stderr = e.runAs(t, "doctor", "--topic", e.topic)
			t.Logf("doctor: exit %d\n%s%s", code, stdout, stderr)
			grant := "grant " + aclName(dropped.Operation) + " on topic " + dropped.Name + " to " + e.principal
			if !strings.Contains(stdout+stderr, grant) {
				t.Errorf("doctor does not say which grant is missing (%q)", grant)
			}
		})
	}
}

func aclName(op kmsg.ACLOperation) string {
	if op == kmsg.ACLOperationDescribeConfigs {
		return "DescribeConfigs"
	}
	s := strings.ToLower(op.String())
	return strings.ToUpper(s[:1]) + s[1:]
}

// TestSecurityMistakesFailFast: a wrong password, a truststore that does not hold the broker's
// CA and a host name the certificate does not name each end the command with an error that
// says so, and not by waiting for --timeout.
func TestSecurityMistakesFailFast(t *testing.T) {
	e := newAuditorEnv(t, auditorACLs)
	stranger := writeFile(t, t.TempDir(), "stranger.pem", strangerCAPEM(t))
	localhost := strings.Replace(e.s.SASLSSL, "127.0.0.1", "localhost", 1)
	for _, tc := range []struct {
		name, bootstrap, config, want string
	}{
		{"wrong password", e.s.SASLSSL, e.s.SCRAMConfig(t, clientconfig.MechSCRAMSHA512, "admin", "wrong"), "SASL_AUTHENTICATION_FAILED"},
		{"unknown CA", e.s.SASLSSL, kafkatest.WriteConfig(t, "security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-512",
			`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="`+e.s.AdminPassword+`";`,
			"ssl.truststore.type=PEM", "ssl.truststore.location="+stranger), "certificate signed by unknown authority"},
		{"host name mismatch", localhost, e.config, "wanted to match localhost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "-b", tc.bootstrap, "--command-config", tc.config, "--timeout", "60s", "status", "--topic", e.topic)
			if code != exitError || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "within --timeout") {
				t.Fatalf("exit %d, want %d with %q and no timeout:\n%s%s", code, exitError, tc.want, stdout, stderr)
			}
		})
	}
}

// strangerCAPEM is a CA certificate that signed nothing the broker has.
func strangerCAPEM(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "a stranger's CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}
