python -u gru4rec_dy.py  --data_path data/ --model_type gru4rec

