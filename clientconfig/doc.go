// Package clientconfig reads a Kafka client properties file, the --command-config of Kafka's
// own tools, and turns it into franz-go options (TLS and SASL). kcleanup, kcbench and the test
// harness use this one implementation.
//
// The contract:
//
//   - The file is read as java.util.Properties reads it (properties.go), and sasl.jaas.config as
//     Kafka's JaasConfig reads it (jaas.go). Values are trimmed, as Kafka trims them.
//   - Every key of Kafka's client configuration (AdminClientConfig, ProducerConfig and
//     ConsumerConfig of Apache Kafka 4.1.1; keys.go) is recognised. The security keys and
//     client.id are mapped onto the client; any other is accepted and ignored with a one-line
//     note (Config.Notes), which commands print on stderr. Only a key that is not Kafka's is an
//     error, with the nearest known key suggested: a typo must not be silently ignored.
//   - security.protocol PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL; sasl.mechanism PLAIN,
//     SCRAM-SHA-256, SCRAM-SHA-512 (delegation tokens with tokenauth=true). GSSAPI and
//     OAUTHBEARER are refused.
//   - Truststores and keystores in PEM (file or inline), JKS and PKCS12 (stores.go; decoded by
//     github.com/pavlo-v-chernykh/keystore-go and software.sslmate.com/src/go-pkcs12), with
//     ssl.truststore.password, ssl.keystore.password and ssl.key.password. A store given by
//     location without a type is JKS (Kafka's default), and JKS and PKCS12 are told apart by
//     content, as Java does. Encrypted PEM keys are refused with a hint.
//   - ssl.endpoint.identification.algorithm empty disables the host name check, and only it:
//     the chain is still verified against the truststore, as in Kafka.
//   - Errors name the file, the line and the key, and never quote a secret; Config's String
//     redacts the password.
//
// Parse reads no file but the one given; Opts (or TLSConfig) reads the stores it names.
package clientconfig
