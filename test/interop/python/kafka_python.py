"""kafka-python (Debian's python3-kafka) against kbroker, for
test/interop/groups_python_test.go.

    python3 kafka_python.py roundtrip <host:port> <topic> <n>
        produces the values 0..n-1 with KafkaProducer (acks=all), then reads
        the topic from the beginning with a group-less KafkaConsumer;
        prints {"values": [...]}.

    python3 kafka_python.py group <host:port> <topic> <group> <want>
        one KafkaConsumer of <group> starts alone; once it has records a
        second joins. Both commit synchronously after every poll, until
        together they have seen <want> distinct values and the second has
        been assigned partitions; then both close (leaving the group).
        prints {"values": [...], "firstAssigned": n, "secondAssigned": n}.
"""
import json
import sys
import threading
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition


def roundtrip(addr, topic, n):
    producer = KafkaProducer(bootstrap_servers=addr, acks="all", client_id="kbroker-kafka-python")
    for i in range(n):
        producer.send(topic, str(i).encode())
    producer.flush(timeout=30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=addr, group_id=None, client_id="kbroker-kafka-python",
                             auto_offset_reset="earliest", enable_auto_commit=False)
    partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or [])]
    consumer.assign(partitions)
    consumer.seek_to_beginning()
    values = []
    deadline = time.time() + 30
    while len(values) < n and time.time() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            values.extend(int(r.value) for r in records)
    consumer.close()
    print(json.dumps({"values": values}))


def group(addr, topic, group_id, want):
    seen, values, lock = set(), [], threading.Lock()
    assigned = [0, 0]
    first_record = threading.Event()
    stop = threading.Event()
    errors = []

    def member(idx):
        try:
            consumer = KafkaConsumer(topic, bootstrap_servers=addr, group_id=group_id,
                                     client_id="kbroker-kafka-python-%d" % idx,
                                     auto_offset_reset="earliest", enable_auto_commit=False,
                                     session_timeout_ms=10000, heartbeat_interval_ms=500,
                                     max_poll_records=20)
            while not stop.is_set():
                batch = consumer.poll(timeout_ms=200)
                with lock:
                    assigned[idx] = len(consumer.assignment())
                    for records in batch.values():
                        for r in records:
                            values.append(int(r.value))
                            seen.add(int(r.value))
                if batch:
                    consumer.commit()  # synchronous: the offsets of what was just processed
                    first_record.set()
                with lock:
                    if len(seen) >= want and assigned[1] > 0:
                        stop.set()
            consumer.close()  # commits nothing more (auto commit is off), leaves the group
        except Exception as e:  # surfaced in the output, failing the test
            errors.append("member %d: %r" % (idx, e))
            stop.set()
            first_record.set()

    threads = [threading.Thread(target=member, args=(0,))]
    threads[0].start()
    first_record.wait(60)
    threads.append(threading.Thread(target=member, args=(1,)))
    threads[1].start()
    stop.wait(90)
    stop.set()
    for t in threads:
        t.join(30)
    if errors:
        sys.stderr.write("\n".join(errors) + "\n")
        sys.exit(1)
    print(json.dumps({"values": values, "firstAssigned": assigned[0], "secondAssigned": assigned[1]}))


def main():
    mode, addr, topic = sys.argv[1:4]
    if mode == "roundtrip":
        roundtrip(addr, topic, int(sys.argv[4]))
    elif mode == "group":
        group(addr, topic, sys.argv[4], int(sys.argv[5]))
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
