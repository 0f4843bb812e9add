"""PaddleRec-style pipe_command reader: psjob's synthetic CTR text → MultiSlot lines.

    label<TAB>d1,...,d13<TAB>ids of C1,ids of C2,...   →   label, dense_input[13], C1..C26

Run by the dataset as `python reader.py` with one data file on stdin (as
PaddleRec's queuedataset_reader.py is). Only the import names psjob.
"""
import psjob.distributed.fleet as fleet  # Paddle: import paddle.distributed.fleet as fleet

NUM_SLOTS = 26


class CriteoLikeReader(fleet.MultiSlotDataGenerator):
    def generate_sample(self, line):
        def reader():
            label, dense, slots = line.rstrip("\n").split("\t")
            sample = [("label", [int(label)]), ("dense_input", [float(v) for v in dense.split(",")])]
            for i, ids in enumerate(slots.split(",")):
                sample.append((f"C{i + 1}", [int(v) for v in ids.split()]))
            yield sample
        return reader


if __name__ == "__main__":
    CriteoLikeReader().run_from_stdin()
