"""confluent-kafka (Debian's python3-confluent-kafka, on librdkafka)
transactions against kbroker, for test/interop/txn_python_test.go.

    python3 confluent_txn.py <host:port> <topic> <transactional.id>
        init_transactions, then three transactions of 5 values each:
        "c0".."c4" committed, "a0".."a4" aborted, "d0".."d4" committed.
        Then reads partition 0 from the beginning with one Consumer per
        isolation.level until the end of the partition (as that level sees
        it) and prints {"read_committed": [...], "read_uncommitted": [...]}.
"""
import json
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition, OFFSET_BEGINNING


def produce(addr, topic, txn_id):
    producer = Producer({"bootstrap.servers": addr, "transactional.id": txn_id, "client.id": "kbroker-confluent-txn"})
    producer.init_transactions(30)
    for prefix, commit in (("c", True), ("a", False), ("d", True)):
        producer.begin_transaction()
        for i in range(5):
            producer.produce(topic, ("%s%d" % (prefix, i)).encode(), partition=0)
        if commit:
            producer.commit_transaction(30)
        else:
            # Flush first so that the aborted records are in the log, not
            # only dropped from the client's queue.
            producer.flush(30)
            producer.abort_transaction(30)


def consume(addr, topic, level):
    consumer = Consumer({"bootstrap.servers": addr, "group.id": "kbroker-confluent-txn-" + level,
                         "enable.auto.commit": False, "isolation.level": level,
                         "enable.partition.eof": True, "client.id": "kbroker-confluent-txn"})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    values = []
    deadline = time.time() + 30
    while time.time() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                break
            raise KafkaException(msg.error())
        values.append(msg.value().decode())
    consumer.close()
    return values


def main():
    addr, topic, txn_id = sys.argv[1:4]
    produce(addr, topic, txn_id)
    print(json.dumps({"read_committed": consume(addr, topic, "read_committed"),
                      "read_uncommitted": consume(addr, topic, "read_uncommitted")}))


if __name__ == "__main__":
    main()
