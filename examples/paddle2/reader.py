"""PaddleRec-style pipe_command reader: psjob's synthetic CTR text → MultiSlot lines.

    label<TAB>d1,...,d13<TAB>ids of C1,ids of C2,...   →   label, C1..C26, dense_input[13]

in the order of static_model.py's create_feeds. Each slot keeps its first id, as in
PaddleRec's Criteo reader (one id per slot: DNNLayer reshapes each slot's
embedding to one row per example).

Run by the dataset as `python reader.py` with one data file on stdin (as
PaddleRec's queuedataset_reader.py is). Only the import names psjob.
"""
import psjob.distributed.fleet as fleet  # Paddle: import paddle.distributed.fleet as fleet

NUM_SLOTS = 26


class CriteoLikeReader(fleet.MultiSlotDataGenerator):
    def generate_sample(self, line):
        def reader():
            label, dense, slots = line.rstrip("\n").split("\t")
            sample = [("label", [int(label)])]
            for i, ids in enumerate(slots.split(",")):
                sample.append((f"C{i + 1}", [int(ids.split()[0])]))
            sample.append(("dense_input", [float(v) for v in dense.split(",")]))
            yield sample
        return reader


if __name__ == "__main__":
    CriteoLikeReader().run_from_stdin()
