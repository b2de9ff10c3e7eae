package peer;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;

/**
 * The Kafka Streams application an Avro user writes for weir's format benchmark: values framed as
 * a schema registry's serializers frame them (magic byte 0, 4-byte schema id, Avro binary), decoded
 * with Apache Avro's generic reader, the string field FIELD uppercased, written back with the
 * generic writer under schema id ID; exactly_once_v2.
 *
 * <p>Usage: AvroUpper BOOTSTRAP APP_ID IN OUT EXPECTED THREADS SCHEMA_FILE ID FIELD. Exits when
 * EXPECTED records were seen and the next commit went through; prints the seconds taken.
 */
public final class AvroUpper {
  /** Reader, writer and buffers of one stream thread (reused record to record, as a serde does). */
  private static final class Codec {
    final GenericDatumReader<GenericRecord> reader;
    final GenericDatumWriter<GenericRecord> writer;
    final ByteArrayOutputStream out = new ByteArrayOutputStream(256);
    BinaryDecoder decoder;
    BinaryEncoder encoder;
    GenericRecord reuse;

    Codec(Schema schema) {
      reader = new GenericDatumReader<>(schema);
      writer = new GenericDatumWriter<>(schema, GenericData.get());
    }
  }

  public static void main(String[] a) throws Exception {
    Properties p = new Properties();
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, a[0]);
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, a[1]);
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.parseInt(a[5]));
    p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.ByteArraySerde.class);
    p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.ByteArraySerde.class);
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
    p.put(StreamsConfig.STATE_DIR_CONFIG, System.getProperty("java.io.tmpdir") + "/ks-" + a[1]);
    long expected = Long.parseLong(a[4]);
    Schema schema = new Schema.Parser().parse(Files.readString(Path.of(a[6])));
    int id = Integer.parseInt(a[7]);
    String field = a[8];
    ThreadLocal<Codec> codecs = ThreadLocal.withInitial(() -> new Codec(schema));
    AtomicLong seen = new AtomicLong();
    CountDownLatch done = new CountDownLatch(1);
    StreamsBuilder b = new StreamsBuilder();
    b.<byte[], byte[]>stream(a[2]).mapValues(v -> {
      if (seen.incrementAndGet() == expected) done.countDown();
      Codec c = codecs.get();
      try {
        if (v.length < 5 || v[0] != 0) throw new IllegalArgumentException("not framed");
        c.decoder = DecoderFactory.get().binaryDecoder(v, 5, v.length - 5, c.decoder);
        GenericRecord r = c.reader.read(c.reuse, c.decoder);
        c.reuse = r;
        r.put(field, r.get(field).toString().toUpperCase());
        c.out.reset();
        c.out.write(0);
        c.out.write(ByteBuffer.allocate(4).putInt(id).array());
        c.encoder = EncoderFactory.get().binaryEncoder(c.out, c.encoder);
        c.writer.write(r, c.encoder);
        c.encoder.flush();
        return c.out.toByteArray();
      } catch (java.io.IOException e) {
        throw new RuntimeException(e);
      }
    }).to(a[3]);
    KafkaStreams s = new KafkaStreams(b.build(), p);
    long t0 = System.nanoTime();
    s.start();
    done.await();
    Thread.sleep(300); // one commit interval (100 ms under EOS) and then some
    s.close();
    System.out.printf("kstreams: %d records in %.2f s (incl. start and final commit)%n", expected, (System.nanoTime() - t0) / 1e9);
  }
}
