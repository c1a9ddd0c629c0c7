package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcleanup/kcleanup/clientconfig"
	"github.com/kcleanup/kcleanup/internal/repo"
)

// EnvSecure names the environment variable that points tests at the secured listeners of the
// development broker: a directory that cmd/kafkadev/kafka.sh writes at every start.
const EnvSecure = "KCLEANUP_TEST_SECURE"

// SecureBroker is the secured side of the development broker (cmd/kafkadev/server.properties.in):
// a SASL_SSL listener (SCRAM-SHA-512, SCRAM-SHA-256, PLAIN) and an SSL listener that requires a
// client certificate, StandardAuthorizer with allow.everyone.if.no.acl.found=false, super users
// User:admin (SASL) and User:ANONYMOUS (the PLAINTEXT listener the other tests use).
type SecureBroker struct {
	Plaintext string // the PLAINTEXT listener, a super user's (Bootstrap)
	SASLSSL   string // host:port of the SASL_SSL listener
	MTLS      string // host:port of the SSL listener (client certificate required)
	Dir       string // the directory holding the files below

	CAFile    string // the CA certificate, PEM; the broker's certificate names IP 127.0.0.1 only
	CAKeyFile string // the CA's key (PKCS#8 PEM), to sign client certificates
	AdminFile string // a --command-config for User:admin over SASL_SSL with SCRAM-SHA-512

	AdminPassword string // User:admin's password (SCRAM-SHA-512, SCRAM-SHA-256 and PLAIN)
	PlainPassword string // User:plain-user's password (PLAIN only: listed in the broker's JAAS)
}

// Secure returns the secured listeners of the test broker, or skips under -short. Without
// them (a broker given by KCLEANUP_TEST_BOOTSTRAP that kafka.sh did not start) the test fails
// under CI=true and is skipped otherwise, saying why.
func Secure(t testing.TB) SecureBroker {
	t.Helper()
	plain := Bootstrap(t)
	dir, err := secureDir(plain)
	if err == nil {
		var s SecureBroker
		if s, err = readSecure(dir); err == nil {
			s.Plaintext = plain
			return s
		}
	}
	msg := fmt.Sprintf("security test: needs the secured listeners of the development broker (%s, written by cmd/kafkadev/kafka.sh): %v;"+
		" run `make test`, or `make kafka-down && make kafka-up` for a broker started by an older kafka.sh", EnvSecure, err)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return SecureBroker{}
}

// secureDir finds the directory: $KCLEANUP_TEST_SECURE, or .kafka/secure of this checkout when
// the plaintext address is this checkout's broker (KCLEANUP_TEST_BOOTSTRAP=$(cat .kafka/bootstrap)).
func secureDir(plain string) (string, error) {
	if d := os.Getenv(EnvSecure); d != "" {
		return d, nil
	}
	root, err := repo.Root()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(root, ".kafka", "bootstrap"))
	if err != nil || strings.TrimSpace(string(b)) != plain {
		return "", errors.Newf("%s is not set and %s is not the broker of this checkout (.kafka/bootstrap)", EnvSecure, plain)
	}
	return filepath.Join(root, ".kafka", "secure"), nil
}

func readSecure(dir string) (SecureBroker, error) {
	read := func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		return strings.TrimSpace(string(b)), err
	}
	s := SecureBroker{Dir: dir, CAFile: filepath.Join(dir, "ca.pem"), CAKeyFile: filepath.Join(dir, "ca-key.pem"),
		AdminFile: filepath.Join(dir, "admin.properties")}
	var err error
	for _, f := range []struct {
		name string
		dst  *string
	}{{"sasl_ssl", &s.SASLSSL}, {"ssl", &s.MTLS}, {"admin.password", &s.AdminPassword}, {"plain-user.password", &s.PlainPassword}} {
		if *f.dst, err = read(f.name); err != nil {
			return SecureBroker{}, err
		}
	}
	for _, f := range []string{s.CAFile, s.CAKeyFile, s.AdminFile} {
		if _, err := os.Stat(f); err != nil {
			return SecureBroker{}, err
		}
	}
	return s, nil
}

// SCRAMConfig writes a --command-config for user over SASL_SSL with mechanism (SCRAM-SHA-512,
// SCRAM-SHA-256 or PLAIN) and the broker's CA as a PEM truststore, plus any extra lines, and
// returns its path (in a temporary directory of the test).
func (s SecureBroker) SCRAMConfig(t testing.TB, mechanism, user, password string, extra ...string) string {
	t.Helper()
	module := "org.apache.kafka.common.security.scram.ScramLoginModule"
	if mechanism == clientconfig.MechPlain {
		module = "org.apache.kafka.common.security.plain.PlainLoginModule"
	}
	lines := append([]string{
		"security.protocol=SASL_SSL",
		"sasl.mechanism=" + mechanism,
		fmt.Sprintf(`sasl.jaas.config=%s required username="%s" password="%s";`, module, user, password),
		"ssl.truststore.type=PEM",
		"ssl.truststore.location=" + s.CAFile,
	}, extra...)
	return WriteConfig(t, lines...)
}

// WriteConfig writes lines as a properties file in a temporary directory and returns its path.
func WriteConfig(t testing.TB, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatalf("kafkatest: %v", err)
	}
	return p
}

// ConfigClient is Client for the --command-config file at path (loaded by clientconfig).
func ConfigClient(t testing.TB, bootstrap, path string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	c, err := clientconfig.Load(path)
	if err != nil {
		t.Fatalf("kafkatest: %v", err)
	}
	sec, err := c.Opts()
	if err != nil {
		t.Fatalf("kafkatest: %v", err)
	}
	return Client(t, bootstrap, append(sec, opts...)...)
}

// NewUser creates a SCRAM user (SCRAM-SHA-512 and SCRAM-SHA-256, one random password) named
// prefix-<random> through admin (a super user's client), waits until it can log in over
// SASL_SSL, and deletes it when the test ends. It has no ACL: grant what the test needs.
func (s SecureBroker) NewUser(t testing.TB, admin *kgo.Client, prefix string) (user, password string) {
	t.Helper()
	user, password = prefix+"-"+randomHex(4), randomHex(12)
	adm := kadm.NewClient(admin)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// One request may name a user once: one request per mechanism.
	for _, m := range []kadm.ScramMechanism{kadm.ScramSha512, kadm.ScramSha256} {
		res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: m, Password: password}})
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			t.Fatalf("kafkatest: create SCRAM user %s: %v", user, err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			_, _ = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: user, Mechanism: m}}, nil)
		})
	}
	// The credential reaches the broker through the metadata log: poll until a login works.
	cl := ConfigClient(t, s.SASLSSL, s.SCRAMConfig(t, clientconfig.MechSCRAMSHA512, user, password), kgo.RequestRetries(0))
	var last error
	for ctx.Err() == nil {
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{}
		if _, last = req.RequestWith(ctx, cl); last == nil {
			return user, password
		}
		cl.ForceMetadataRefresh()
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("kafkatest: SCRAM user %s cannot log in: %v", user, last)
	return "", ""
}

// ACL is one allow rule: principal may do operation on a resource.
type ACL struct {
	Principal string               // "User:kcleanup-worker"
	Resource  kmsg.ACLResourceType // kmsg.ACLResourceTypeTopic, ...Group, ...Cluster
	Name      string               // the resource's literal name ("kafka-cluster" for the cluster)
	Operation kmsg.ACLOperation    // kmsg.ACLOperationRead, ...
}

func (a ACL) String() string {
	return fmt.Sprintf("%s %s on %s %s", a.Principal, strings.Title(strings.ToLower(a.Operation.String())), strings.ToLower(a.Resource.String()), a.Name) //nolint:staticcheck // ASCII names
}

// Grant creates the ACLs through admin (a super user's client), waits until the broker's
// authorizer lists them (DescribeACLs), and deletes them when the test ends.
func Grant(t testing.TB, admin *kgo.Client, acls ...ACL) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req := kmsg.NewPtrCreateACLsRequest()
	for _, a := range acls {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = a.Resource, a.Name, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = a.Principal, "*", a.Operation, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, c)
	}
	resp, err := req.RequestWith(ctx, admin)
	if err != nil {
		t.Fatalf("kafkatest: create ACLs: %v", err)
	}
	for i, r := range resp.Results {
		if r.ErrorCode != 0 {
			t.Fatalf("kafkatest: create ACL %s: error code %d %v", acls[i], r.ErrorCode, r.ErrorMessage)
		}
	}
	t.Cleanup(func() { Revoke(t, admin, acls...) })
	for _, a := range acls {
		for n := 0; ; n++ {
			if describeCount(ctx, admin, a) > 0 {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("kafkatest: ACL %s not visible on the broker", a)
			}
			time.Sleep(50 * time.Millisecond) // polling, bounded by ctx
		}
	}
}

// describeCount is how many ACLs the broker's authorizer holds that match a exactly.
func describeCount(ctx context.Context, admin *kgo.Client, a ACL) int {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourceName, req.ResourcePatternType = a.Resource, kmsg.StringPtr(a.Name), kmsg.ACLResourcePatternTypeLiteral
	req.Principal, req.Host, req.Operation, req.PermissionType = kmsg.StringPtr(a.Principal), kmsg.StringPtr("*"), a.Operation, kmsg.ACLPermissionTypeAllow
	resp, err := req.RequestWith(ctx, admin)
	if err != nil || resp.ErrorCode != 0 {
		return 0
	}
	n := 0
	for _, r := range resp.Resources {
		n += len(r.ACLs)
	}
	return n
}

// Revoke deletes the ACLs (no error if they do not exist).
func Revoke(t testing.TB, admin *kgo.Client, acls ...ACL) {
	t.Helper()
	if len(acls) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req := kmsg.NewPtrDeleteACLsRequest()
	for _, a := range acls {
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourceName, f.ResourcePatternType = a.Resource, kmsg.StringPtr(a.Name), kmsg.ACLResourcePatternTypeLiteral
		f.Principal, f.Host, f.Operation, f.PermissionType = kmsg.StringPtr(a.Principal), kmsg.StringPtr("*"), a.Operation, kmsg.ACLPermissionTypeAllow
		req.Filters = append(req.Filters, f)
	}
	if _, err := req.RequestWith(ctx, admin); err != nil {
		t.Errorf("kafkatest: delete ACLs: %v", err)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
