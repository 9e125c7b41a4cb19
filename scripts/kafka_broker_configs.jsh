// Apache Kafka 4.4.0's broker configs and their ConfigDef types (KafkaConfig's and
// DynamicConfig.Broker's), as the entries of src/pykraft/controller/broker_config_types.py:
//   jshell --class-path "$(./scripts/kafka.sh classpath 4.4)" -q scripts/kafka_broker_configs.jsh
var keys = new java.util.TreeMap<String, String>();
kafka.server.KafkaConfig.configDef().configKeys().forEach((k, v) -> keys.put(k, v.type.toString()));
org.apache.kafka.server.config.DynamicConfig.Broker.configKeys().forEach((k, v) -> keys.putIfAbsent(k, v.type.toString()));
keys.forEach((k, v) -> System.out.println("    \"" + k + "\": \"" + v + "\","));
/exit
