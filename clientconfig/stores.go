package clientconfig

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"sort"
	"strings"

	"github.com/cockroachdb/errors"
	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// jksMagic starts every JKS file; a PKCS12 file is a DER SEQUENCE (0x30).
var jksMagic = []byte{0xfe, 0xed, 0xfe, 0xed}

// storeFormat tells JKS from PKCS12 by content, as Java does for both types since Java 9
// (keystore.type.compat): an operator's "JKS" truststore made by a recent keytool is PKCS12.
// It returns "" for anything else, with a hint when the file is PEM.
func storeFormat(data []byte) (string, error) {
	switch {
	case bytes.HasPrefix(data, jksMagic):
		return storeJKS, nil
	case len(data) > 0 && data[0] == 0x30:
		return storePKCS12, nil
	case bytes.Contains(data, []byte("-----BEGIN ")):
		return "", errors.New("the file is PEM text, not a JKS or PKCS12 store")
	default:
		return "", errors.New("the file is neither a JKS nor a PKCS12 store")
	}
}

// binaryTrustStore reads the certificates of a JKS or PKCS12 truststore: every trusted
// certificate entry, and the chain of every key entry (Java's TrustManager trusts those too).
func (c Config) binaryTrustStore(data []byte) ([]*x509.Certificate, error) {
	fail := func(err error) ([]*x509.Certificate, error) {
		return nil, c.storeError(keyTruststoreLocation, keyTruststoreType, err)
	}
	format, err := storeFormat(data)
	if err != nil {
		return fail(errors.WithHintf(err, "set %s=PEM for a PEM file", keyTruststoreType))
	}
	var certs []*x509.Certificate
	switch format {
	case storeJKS:
		if c.truststorePassword == "" {
			return fail(errors.WithHintf(errors.New("a JKS truststore needs its password to be checked"),
				"set %s (kcleanup verifies the store's integrity; Java would skip that without a password)", keyTruststorePassword))
		}
		ks := keystore.New()
		if err := ks.Load(bytes.NewReader(data), []byte(c.truststorePassword)); err != nil {
			return fail(passwordHint(err, keyTruststorePassword))
		}
		for _, alias := range ks.Aliases() {
			var ders [][]byte
			if ks.IsTrustedCertificateEntry(alias) {
				e, err := ks.GetTrustedCertificateEntry(alias)
				if err != nil {
					return fail(errors.Wrapf(err, "entry %q", alias))
				}
				ders = append(ders, e.Certificate.Content)
			} else if chain, err := ks.GetPrivateKeyEntryCertificateChain(alias); err == nil {
				for _, c := range chain {
					ders = append(ders, c.Content)
				}
			}
			for _, der := range ders {
				cert, err := x509.ParseCertificate(der)
				if err != nil {
					return fail(errors.Wrapf(err, "entry %q", alias))
				}
				certs = append(certs, cert)
			}
		}
	case storePKCS12:
		certs, err = pkcs12.DecodeTrustStore(data, c.truststorePassword)
		if err != nil {
			// A keystore used as truststore: trust its chain, as Java does.
			_, leaf, cas, err2 := pkcs12.DecodeChain(data, c.truststorePassword)
			if err2 != nil {
				return fail(passwordHint(err, keyTruststorePassword))
			}
			certs = append([]*x509.Certificate{leaf}, cas...)
		}
	}
	if len(certs) == 0 {
		return fail(errors.New("the store holds no certificate"))
	}
	return certs, nil
}

// binaryKeyStore reads the client certificate from a JKS or PKCS12 keystore: exactly one key
// entry, its key decrypted with ssl.key.password (Kafka's default: the store's password).
func (c Config) binaryKeyStore(data []byte) (tls.Certificate, error) {
	fail := func(err error) (tls.Certificate, error) {
		return tls.Certificate{}, c.storeError(keyKeystoreLocation, keyKeystoreType, err)
	}
	format, err := storeFormat(data)
	if err != nil {
		return fail(errors.WithHintf(err, "set %s=PEM for a PEM file", keyKeystoreType))
	}
	keyPassword := c.keystorePassword
	if c.hasKeyPassword {
		keyPassword = c.keyPassword
	}
	var key crypto.PrivateKey
	var chain []*x509.Certificate
	switch format {
	case storeJKS:
		if c.keystorePassword == "" {
			return fail(errors.WithHintf(errors.New("a JKS keystore needs its password"), "set %s", keyKeystorePassword))
		}
		ks := keystore.New()
		if err := ks.Load(bytes.NewReader(data), []byte(c.keystorePassword)); err != nil {
			return fail(passwordHint(err, keyKeystorePassword))
		}
		var aliases []string
		for _, a := range ks.Aliases() {
			if ks.IsPrivateKeyEntry(a) {
				aliases = append(aliases, a)
			}
		}
		sort.Strings(aliases)
		if len(aliases) != 1 {
			return fail(errors.Newf("the store holds %d private key entries (%s); want exactly one", len(aliases), strings.Join(aliases, ", ")))
		}
		e, err := ks.GetPrivateKeyEntry(aliases[0], []byte(keyPassword))
		if err != nil {
			return fail(passwordHint(errors.Wrapf(err, "key entry %q", aliases[0]), keyKeyPassword))
		}
		if key, err = x509.ParsePKCS8PrivateKey(e.PrivateKey); err != nil {
			return fail(errors.Wrapf(err, "key entry %q", aliases[0]))
		}
		for _, cc := range e.CertificateChain {
			cert, err := x509.ParseCertificate(cc.Content)
			if err != nil {
				return fail(errors.Wrapf(err, "key entry %q", aliases[0]))
			}
			chain = append(chain, cert)
		}
	case storePKCS12:
		// A PKCS12 store has one password for the store and its keys (Java too).
		k, leaf, cas, err := pkcs12.DecodeChain(data, keyPassword)
		if err != nil {
			return fail(passwordHint(err, keyKeystorePassword))
		}
		key, chain = k, append([]*x509.Certificate{leaf}, cas...)
	}
	cert, err := certificateFor(key, chain)
	if err != nil {
		return fail(err)
	}
	return cert, nil
}

// certificateFor puts the certificate whose public key matches key first (a store's order is
// not always leaf first) and checks that there is one.
func certificateFor(key crypto.PrivateKey, chain []*x509.Certificate) (tls.Certificate, error) {
	signer, ok := key.(crypto.Signer)
	if !ok {
		return tls.Certificate{}, errors.New("the private key cannot sign")
	}
	type equaler interface{ Equal(crypto.PublicKey) bool }
	pub, ok := signer.Public().(equaler)
	if !ok {
		return tls.Certificate{}, errors.New("unsupported private key type")
	}
	out := tls.Certificate{PrivateKey: key}
	for i, cert := range chain {
		if pub.Equal(cert.PublicKey) {
			out.Leaf = cert
			out.Certificate = append(out.Certificate, cert.Raw)
			for j, other := range chain {
				if j != i {
					out.Certificate = append(out.Certificate, other.Raw)
				}
			}
			return out, nil
		}
	}
	return tls.Certificate{}, errors.New("no certificate in the store matches its private key")
}

// passwordHint adds the likely fix to a store's decoding error: most are a wrong password.
func passwordHint(err error, key string) error {
	msg := err.Error()
	if strings.Contains(msg, "digest") || strings.Contains(msg, "password") || strings.Contains(msg, "decryption") || strings.Contains(msg, "MAC") {
		return errors.WithHintf(errors.Wrap(err, "wrong password?"), "check %s", key)
	}
	return errors.WithHintf(err, "check the store with: keytool -list -keystore FILE (and %s)", key)
}

// storeError locates a store's error at its location key, and says which type was read.
func (c Config) storeError(locationKey, typeKey string, err error) error {
	line := c.lines[locationKey]
	t := c.truststoreType
	if typeKey == keyKeystoreType {
		t = c.keystoreType
	}
	return errors.Wrapf(err, "%s:%d: %s (%s %s)", c.name, line, locationKey, typeKey, t)
}
