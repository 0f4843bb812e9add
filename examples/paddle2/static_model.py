# The static-graph model wrapper of PaddleRec's rank models (models/rank/*/static_model.py):
# feeds, forward net, loss and metrics, optimizer. Only the imports name psjob.
import psjob as paddle

from net import DNNLayer, WideDeepLayer


class StaticModel():
    """config: sparse_feature_number, sparse_feature_dim, dense_input_dim, sparse_inputs_slots,
    fc_sizes, learning_rate, and model: "dnn" or "wide_deep"."""

    def __init__(self, config):
        self.cost = None
        self.infer_target_var = None
        self.config = config
        self._init_hyper_parameters()

    def _init_hyper_parameters(self):
        self.is_distributed = False
        self.distributed_embedding = False
        self.model = self.config.get("model", "dnn")
        self.sparse_feature_number = self.config.get("sparse_feature_number")
        self.sparse_feature_dim = self.config.get("sparse_feature_dim")
        self.sparse_inputs_slots = self.config.get("sparse_inputs_slots")
        self.dense_input_dim = self.config.get("dense_input_dim")
        self.learning_rate = self.config.get("learning_rate")
        self.fc_sizes = self.config.get("fc_sizes")

    def create_feeds(self, is_infer=False):
        dense_input = paddle.static.data(
            name="dense_input", shape=[None, self.dense_input_dim], dtype="float32")

        sparse_input_ids = [
            paddle.static.data(name="C" + str(i), shape=[None, 1], lod_level=1, dtype="int64")
            for i in range(1, self.sparse_inputs_slots)
        ]

        label = paddle.static.data(name="label", shape=[None, 1], dtype="int64")

        feeds_list = [label] + sparse_input_ids + [dense_input]
        return feeds_list

    def net(self, input, is_infer=False):
        self.label_input = input[0]
        self.sparse_inputs = input[1:self.sparse_inputs_slots]
        self.dense_input = input[-1]
        sparse_number = self.sparse_inputs_slots - 1

        if self.model == "wide_deep":
            return self._wide_deep_net(sparse_number, is_infer)
        return self._dnn_net(sparse_number, is_infer)

    def _dnn_net(self, sparse_number, is_infer):
        dnn_model = DNNLayer(self.sparse_feature_number, self.sparse_feature_dim,
                             self.dense_input_dim, sparse_number, self.fc_sizes)
        raw_predict_2d = dnn_model(self.sparse_inputs, self.dense_input)
        predict_2d = paddle.nn.functional.softmax(raw_predict_2d)
        self.predict = predict_2d
        auc, batch_auc, _ = paddle.static.auc(input=self.predict, label=self.label_input,
                                              num_thresholds=2**12, slide_steps=20)
        self.inference_target_var = auc
        if is_infer:
            return {'auc': auc}
        cost = paddle.nn.functional.cross_entropy(input=raw_predict_2d, label=self.label_input)
        avg_cost = paddle.mean(x=cost)
        self._cost = avg_cost
        return {'cost': avg_cost, 'auc': auc}

    def _wide_deep_net(self, sparse_number, is_infer):
        wide_deep_model = WideDeepLayer(self.sparse_feature_number, self.sparse_feature_dim,
                                        self.dense_input_dim, sparse_number, self.fc_sizes)
        pred = wide_deep_model.forward(self.sparse_inputs, self.dense_input)
        predict_2d = paddle.concat(x=[1 - pred, pred], axis=1)
        self.predict = pred
        auc, batch_auc, _ = paddle.static.auc(input=predict_2d, label=self.label_input,
                                              num_thresholds=2**12, slide_steps=20)
        self.inference_target_var = auc
        if is_infer:
            return {'auc': auc}
        cost = paddle.nn.functional.log_loss(input=pred,
                                             label=paddle.cast(self.label_input, dtype="float32"))
        avg_cost = paddle.mean(x=cost)
        self._cost = avg_cost
        return {'cost': avg_cost, 'auc': auc}

    def create_optimizer(self, strategy=None):
        optimizer = paddle.optimizer.Adam(learning_rate=self.learning_rate, lazy_mode=True)
        if strategy is not None:
            import psjob.distributed.fleet as fleet
            optimizer = fleet.distributed_optimizer(optimizer, strategy)
        optimizer.minimize(self._cost)

    def infer_net(self, input):
        return self.net(input, is_infer=True)
