// Prints every configuration name of Kafka's AdminClientConfig, ProducerConfig and
// ConsumerConfig, one a line, sorted: the list keys.go must hold (TestKeysAreKafkas).
import java.util.TreeSet;

public class KafkaClientKeys {
  public static void main(String[] args) {
    TreeSet<String> keys = new TreeSet<>();
    keys.addAll(org.apache.kafka.clients.admin.AdminClientConfig.configNames());
    keys.addAll(org.apache.kafka.clients.producer.ProducerConfig.configNames());
    keys.addAll(org.apache.kafka.clients.consumer.ConsumerConfig.configNames());
    for (String k : keys) System.out.println(k);
  }
}
