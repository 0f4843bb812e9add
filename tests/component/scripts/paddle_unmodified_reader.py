"""The pipe_command of paddle_unmodified.py, written as PaddleRec's readers are: it imports
paddle (a grandchild of `psjob launch --as-paddle`) and turns "x1 .. x13 y" lines into
MultiSlot samples."""
import paddle
import paddle.distributed.fleet as fleet


class Reader(fleet.MultiSlotDataGenerator):
    def generate_sample(self, line):
        def reader():
            values = [float(v) for v in line.split()]
            yield [("x", values[:13]), ("y", values[13:])]
        return reader


if __name__ == "__main__":
    if paddle.__name__ != "psjob":  # this process must have been given psjob as paddle
        raise SystemExit(f"paddle is {paddle.__name__}, not psjob")
    Reader().run_from_stdin()
